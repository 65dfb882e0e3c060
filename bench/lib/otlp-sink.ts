// Bench helper: the smallest OTLP/HTTP trace receiver — one per traced configuration, each on
// its own port on 127.0.0.1, so what arrives is attributed by port whatever path the exporter
// joins to its endpoint. It answers every POST 200 and counts what came: requests and bytes,
// and, when the body decodes (OTLP JSON or protobuf, plain or gzip/deflate), spans and
// distinct trace ids — the trace count is what says what fraction of requests was sampled.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';

export interface SinkCounts {
  /** POSTs to a path ending in /v1/traces. */
  posts: number;
  bytes: number;
  /** Spans in the bodies that decoded. */
  spans: number;
  /** Distinct trace ids in the bodies that decoded. */
  traces: number;
  /** Trace POSTs whose body was neither OTLP JSON nor OTLP protobuf (then spans/traces undercount). */
  undecoded: number;
  /** Content types seen on trace POSTs. */
  contentTypes: string[];
  /** Requests to anything but POST …/v1/traces (metrics, logs, probes), by "METHOD path". */
  other: Record<string, number>;
}

export interface OtlpSink {
  /** The value for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  endpoint: string;
  port: number;
  counts(): SinkCounts;
  close(): Promise<void>;
}

/** Fields of one protobuf message: [field number, wire type, the bytes of a length-delimited value]. */
function* protoFields(buf: Buffer): Generator<[number, number, Buffer | null]> {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (at >= buf.length) throw new Error('truncated varint');
      const byte = buf[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7;
      if (shift > 63) throw new Error('varint too long');
    }
  };
  while (at < buf.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = varint();
      if (at + len > buf.length) throw new Error('truncated field');
      yield [field, wire, buf.subarray(at, at + len)];
      at += len;
      continue;
    } else throw new Error(`unsupported wire type ${wire}`);
    if (at > buf.length) throw new Error('truncated field');
    yield [field, wire, null];
  }
}

const lenFields = (buf: Buffer, field: number): Buffer[] => [...protoFields(buf)].filter(([f, w, v]) => f === field && w === 2 && v !== null).map(([, , v]) => v!);

/**
 * ExportTraceServiceRequest: resource_spans = 1 → ResourceSpans: scope_spans = 2 (or the
 * older instrumentation_library_spans = 1000) → ScopeSpans: spans = 2 → Span: trace_id = 1.
 */
function protobufTraceIds(body: Buffer): string[] {
  const ids: string[] = [];
  for (const resource of lenFields(body, 1)) {
    for (const scope of [...lenFields(resource, 2), ...lenFields(resource, 1000)]) {
      for (const span of lenFields(scope, 2)) ids.push(lenFields(span, 1)[0]?.toString('hex') ?? '');
    }
  }
  return ids;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The same over OTLP JSON (camelCase per the spec; snake_case accepted as well). */
function jsonTraceIds(body: Buffer): string[] {
  const doc: unknown = JSON.parse(body.toString('utf8'));
  if (!isRecord(doc)) throw new Error('not an object');
  const ids: string[] = [];
  for (const resource of list(doc.resourceSpans ?? doc.resource_spans)) {
    if (!isRecord(resource)) continue;
    const scopes = [...list(resource.scopeSpans ?? resource.scope_spans), ...list(resource.instrumentationLibrarySpans)];
    for (const scope of scopes) {
      if (!isRecord(scope)) continue;
      for (const span of list(scope.spans)) ids.push(isRecord(span) ? String(span.traceId ?? span.trace_id ?? '') : '');
    }
  }
  return ids;
}

/** Trace ids of a body's spans (one per span, repeats included); null when it is not OTLP. */
export function traceIdsOf(body: Buffer, contentType: string, contentEncoding: string): string[] | null {
  try {
    const plain = contentEncoding === 'gzip' ? gunzipSync(body) : contentEncoding === 'deflate' ? inflateSync(body) : body;
    if (contentType.includes('json')) return jsonTraceIds(plain);
    return protobufTraceIds(plain);
  } catch {
    return null;
  }
}

/** A sink on 127.0.0.1 (port 0: a free one). Rejects if the port is taken. */
export function startOtlpSink(port = 0): Promise<OtlpSink> {
  const counts = { posts: 0, bytes: 0, spans: 0, undecoded: 0 };
  const traceIds = new Set<string>();
  const contentTypes = new Set<string>();
  const other: Record<string, number> = {};
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const contentType = (req.headers['content-type'] ?? '').toLowerCase();
      if (req.method !== 'POST' || !path.endsWith('/v1/traces')) {
        const key = `${req.method ?? '?'} ${path}`;
        other[key] = (other[key] ?? 0) + 1;
        res.writeHead(req.method === 'POST' ? 200 : 404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      counts.posts++;
      counts.bytes += body.length;
      contentTypes.add(contentType || '(none)');
      const ids = traceIdsOf(body, contentType, String(req.headers['content-encoding'] ?? '').toLowerCase());
      if (ids === null) counts.undecoded++;
      else {
        counts.spans += ids.length;
        for (const id of ids) traceIds.add(id);
      }
      // An empty ExportTraceServiceResponse: {} in JSON, no bytes in protobuf.
      if (contentType.includes('json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as AddressInfo).port;
      resolve({
        endpoint: `http://127.0.0.1:${bound}`,
        port: bound,
        counts: () => ({ ...counts, traces: traceIds.size, contentTypes: [...contentTypes], other: { ...other } }),
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
