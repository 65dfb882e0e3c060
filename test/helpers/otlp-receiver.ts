// Test helper: a small OTLP/HTTP trace receiver — what an OpenTelemetry Collector's HTTP port
// is to the gateway — that keeps every span it is sent, flattened for assertions. It accepts
// POST /v1/traces in OTLP/JSON (what @opentelemetry/exporter-trace-otlp-http sends), gzipped
// or not, answers 200 `{}`, and refuses other encodings with 415 so a change of exporter is
// noticed rather than silently received as nothing.

import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface ReceivedEvent {
  name: string;
  attributes: Record<string, unknown>;
}

export interface ReceivedSpan {
  /** Lowercase hex, 32 digits. */
  traceId: string;
  /** Lowercase hex, 16 digits. */
  spanId: string;
  /** Lowercase hex, or '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: 'UNSPECIFIED' | 'INTERNAL' | 'SERVER' | 'CLIENT' | 'PRODUCER' | 'CONSUMER';
  attributes: Record<string, unknown>;
  events: ReceivedEvent[];
  /** 0 unset, 1 ok, 2 error (OTLP's StatusCode). */
  statusCode: number;
  statusMessage: string;
  /** The resource's service.name. */
  serviceName: string;
  /** All the resource's attributes. */
  resource: Record<string, unknown>;
  /** The instrumentation scope's name. */
  scope: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:port — the base for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  /** Every span received so far, in arrival order. */
  spans(): ReceivedSpan[];
  /** The headers of each export request (to check OTEL_EXPORTER_OTLP_HEADERS). */
  requests(): http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

// The OTLP/JSON shapes, as far as this receiver reads them.
interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  bytesValue?: string;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface OtlpSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  kind?: number;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: KeyValue[];
  events?: { name?: string; attributes?: KeyValue[] }[];
  status?: { code?: number; message?: string };
}
interface ExportTraceServiceRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { scope?: { name?: string }; spans?: OtlpSpan[] }[];
  }[];
}

const KINDS: ReceivedSpan['kind'][] = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];

function value(v: AnyValue | undefined): unknown {
  if (v === undefined) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(value);
  if (v.kvlistValue !== undefined) return attributes(v.kvlistValue.values);
  return undefined;
}

function attributes(list: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = value(kv.value);
  return out;
}

/** OTLP/JSON ids are hex; protobuf-JSON mappings elsewhere use base64: accept both. */
function hexId(id: string | undefined, bytes: number): string {
  if (id === undefined || id === '') return '';
  if (id.length === bytes * 2 && /^[0-9a-fA-F]+$/.test(id)) return id.toLowerCase();
  return Buffer.from(id, 'base64').toString('hex');
}

function flatten(body: ExportTraceServiceRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: hexId(s.traceId, 16),
          spanId: hexId(s.spanId, 8),
          parentSpanId: hexId(s.parentSpanId, 8),
          name: s.name ?? '',
          kind: KINDS[s.kind ?? 0] ?? 'UNSPECIFIED',
          attributes: attributes(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name ?? '', attributes: attributes(e.attributes) })),
          statusCode: s.status?.code ?? 0,
          statusMessage: s.status?.message ?? '',
          serviceName: typeof resource['service.name'] === 'string' ? resource['service.name'] : '',
          resource,
          scope: ss.scope?.name ?? '',
          startTimeUnixNano: String(s.startTimeUnixNano ?? ''),
          endTimeUnixNano: String(s.endTimeUnixNano ?? ''),
        });
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = (status: number, body: string) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
      };
      if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/traces') return answer(404, '{"error":"not found"}');
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return answer(415, '{"error":"only OTLP/JSON"}');
      try {
        let raw = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
        received.push(...flatten(JSON.parse(raw.toString('utf8')) as ExportTraceServiceRequest));
        headers.push(req.headers);
        answer(200, '{}');
      } catch (err) {
        answer(400, JSON.stringify({ error: String(err) }));
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    requests: () => [...headers],
    close: () =>
      new Promise<void>((resolve) => {
        // The exporter keeps its connection alive: close it, or close() waits for its timeout.
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
