// Tests of the gateway's tracing module against a real OTLP/HTTP receiver on loopback: when it
// is on, what the request and attempt spans carry, the W3C context passed on to replicas
// (sampled or not), the sampler, resource and exporter settings read from the env given, and
// that a collector that is down is logged, not thrown.

import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../test/helpers/otlp-receiver.js';
import { parseResourceAttributes, tracingConfigFromEnv } from './config.js';
import { splitAddress, tracingFromEnv, type Tracing } from './tracing.js';
import { tracesUrl, tracingWanted } from './wanted.js';

const silent = pino({ level: 'silent' });

const PARENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN = '00f067aa0ba902b7';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  cleanups.push(() => r.close());
  return r;
}

function on(env: NodeJS.ProcessEnv, log = silent, serviceName = 'infergate-test'): Tracing {
  const tracing = tracingFromEnv(env, { serviceName }, log);
  if (tracing === null) throw new Error('tracing is off');
  cleanups.push(() => tracing.shutdown());
  return tracing;
}

/** A header's value in a flat [name, value, ...] array. */
function header(flat: readonly string[] | null, name: string): string | undefined {
  if (flat === null) return undefined;
  for (let i = 0; i < flat.length; i += 2) if (flat[i] === name) return flat[i + 1];
  return undefined;
}

function byKind(spans: ReceivedSpan[], kind: ReceivedSpan['kind']): ReceivedSpan[] {
  return spans.filter((s) => s.kind === kind);
}

describe('tracingFromEnv', () => {
  it('is off (null) without an OTLP endpoint, with a blank one, or when the SDK is disabled', () => {
    expect(tracingFromEnv({}, {}, silent)).toBeNull();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '  ' }, {}, silent)).toBeNull();
    expect(tracingFromEnv({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, {}, silent)).toBeNull();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }, {}, silent)).toBeNull();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }, {}, silent)).toBeNull();
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), cb()) });
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '127.0.0.1:4318' }, {}, pino(sink))).toBeNull();
    expect(lines).toMatchObject([{ level: 50, endpoint: '127.0.0.1:4318/v1/traces', msg: 'tracing: the OTLP trace endpoint is not an http(s) URL; tracing is off' }]);
    // tracingWanted (no OpenTelemetry import) answers the same question before the SDK is loaded.
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
  });

  it('exports a request joined to the incoming trace, its phases, and a child span per attempt whose context goes to the replica', async () => {
    const r = await receiver();
    const tracing = on({ OTEL_EXPORTER_OTLP_ENDPOINT: r.url });

    const req = tracing.startRequest(
      { traceparent: `00-${PARENT_TRACE}-${PARENT_SPAN}-01`, tracestate: 'vendor=abc' },
      { method: 'POST', path: '/v1/chat/completions?api_key=secret', protocol: 'http' },
    );
    expect(req.recording).toBe(true);
    req.phase('route');
    req.set({ 'infergate.deployment': 'chat', 'gen_ai.request.model': 'tiny', skipped: undefined });
    req.phase('authenticated');
    req.phase('admitted');
    req.phase('selected', { 'infergate.replica.count': 2 });
    const first = req.attempt({ id: 7, address: '127.0.0.1:9001' }, 1);
    first.end('connection_failed');
    const second = req.attempt({ id: 8, address: '127.0.0.1:9002' }, 2);
    req.firstByte(0.25);
    second.end('responded', 200);
    req.end(200, { prompt: 12, completion: 5, cached: 8 });
    req.end(500); // a second end changes nothing

    await tracing.forceFlush();
    await expect.poll(() => r.spans().length).toBe(3);
    const spans = r.spans();
    const [server] = byKind(spans, 'SERVER');
    const attempts = byKind(spans, 'CLIENT');
    expect(server).toBeDefined();
    expect(server!.traceId).toBe(PARENT_TRACE);
    expect(server!.parentSpanId).toBe(PARENT_SPAN);
    expect(server!.name).toBe('POST');
    expect(server!.scope).toBe('infergate.gateway');
    expect(server!.events.map((e) => e.name)).toEqual(['route', 'authenticated', 'admitted', 'selected', 'first_byte']);
    expect(server!.events[3]!.attributes).toEqual({ 'infergate.replica.count': 2 });
    expect(server!.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.path': '/v1/chat/completions',
      'http.response.status_code': 200,
      'infergate.deployment': 'chat',
      'gen_ai.request.model': 'tiny',
      'gen_ai.response.time_to_first_chunk': 0.25,
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 5,
      'gen_ai.usage.cache_read.input_tokens': 8,
    });
    expect(server!.attributes).not.toHaveProperty('skipped');
    expect(server!.statusCode).toBe(0);

    expect(attempts).toHaveLength(2);
    const a1 = attempts.find((s) => s.attributes['infergate.attempt'] === 1)!;
    const a2 = attempts.find((s) => s.attributes['infergate.attempt'] === 2)!;
    for (const a of [a1, a2]) {
      expect(a.traceId).toBe(PARENT_TRACE);
      expect(a.parentSpanId).toBe(server!.spanId);
      expect(a.name).toBe('POST');
    }
    expect(a1.attributes).toMatchObject({ 'infergate.replica.id': 7, 'server.address': '127.0.0.1', 'server.port': 9001, 'infergate.attempt.outcome': 'connection_failed', 'error.type': 'connection_failed' });
    expect(a1.statusCode).toBe(2);
    expect(a2.attributes).toMatchObject({ 'infergate.replica.id': 8, 'server.port': 9002, 'http.request.resend_count': 1, 'infergate.attempt.outcome': 'responded', 'http.response.status_code': 200 });
    expect(a2.attributes).not.toHaveProperty('error.type');
    expect(a2.statusCode).toBe(0);

    // What each replica was sent: the attempt span as its parent, sampled, and the tracestate.
    expect(header(first.headers, 'traceparent')).toBe(`00-${PARENT_TRACE}-${a1.spanId}-01`);
    expect(header(second.headers, 'traceparent')).toBe(`00-${PARENT_TRACE}-${a2.spanId}-01`);
    expect(header(second.headers, 'tracestate')).toBe('vendor=abc');
    expect(second.headers).toHaveLength(4);
  });

  it('starts a new trace without a traceparent, or with a malformed one', async () => {
    const r = await receiver();
    const tracing = on({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${r.url}/v1/traces` });
    tracing.startRequest({}, { method: 'GET', path: '/health', protocol: 'http' }).end(200);
    tracing.startRequest({ traceparent: 'garbage' }, { method: 'GET', path: '/health', protocol: 'http' }).end(200);
    await tracing.forceFlush();
    await expect.poll(() => r.spans().length).toBe(2);
    for (const s of r.spans()) {
      expect(s.parentSpanId).toBe('');
      expect(s.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(s.traceId).not.toBe(PARENT_TRACE);
    }
  });

  it("with a sampler that drops, exports nothing and leaves the client's trace context to pass as it came", async () => {
    const r = await receiver();
    const tracing = on({ OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });

    const joined = tracing.startRequest({ traceparent: `00-${PARENT_TRACE}-${PARENT_SPAN}-01`, tracestate: 'vendor=abc' }, { method: 'POST', path: '/v1/completions', protocol: 'http' });
    expect(joined.recording).toBe(false);
    joined.phase('route');
    joined.set({ 'infergate.deployment': 'chat' });
    const attempt = joined.attempt({ id: 1, address: '127.0.0.1:9001' }, 1);
    // No headers of its own: the forwarder sends the client's traceparent and tracestate.
    expect(attempt.headers).toBeNull();
    attempt.end('responded');
    joined.firstByte(0.1);
    joined.end(200, { prompt: 1, completion: 1 });

    const fresh = tracing.startRequest({}, { method: 'POST', path: '/v1/completions', protocol: 'http' });
    expect(fresh.recording).toBe(false);
    expect(fresh.attempt({ id: 1, address: '127.0.0.1:9001' }, 1).headers).toBeNull();
    fresh.end(200);

    // shutdown() returns once every queued span has been exported: none were.
    await tracing.shutdown();
    expect(r.spans()).toEqual([]);
    expect(r.requests()).toEqual([]);
  });

  it('samples by trace id as the SDK does: at a ratio, about that share of new traces is recorded', async () => {
    const r = await receiver();
    const tracing = on({ OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' });
    let recorded = 0;
    for (let i = 0; i < 2000; i++) {
      const req = tracing.startRequest({}, { method: 'POST', path: '/x', protocol: 'http' });
      if (req.recording) recorded++;
      req.end(200);
    }
    expect(recorded).toBeGreaterThan(400);
    expect(recorded).toBeLessThan(600);
    await tracing.shutdown();
    expect(new Set(r.spans().map((s) => s.traceId)).size).toBe(recorded);
  });

  it('by default follows the caller: an unsampled traceparent is not recorded, and passes on unchanged', async () => {
    const r = await receiver();
    const tracing = on({ OTEL_EXPORTER_OTLP_ENDPOINT: r.url });
    const req = tracing.startRequest({ traceparent: `00-${PARENT_TRACE}-${PARENT_SPAN}-00` }, { method: 'POST', path: '/x', protocol: 'http' });
    expect(req.recording).toBe(false);
    expect(req.attempt({ id: 1, address: 'a:1' }, 1).headers).toBeNull();
    req.end(200);
    await tracing.shutdown();
    expect(r.spans()).toEqual([]);
  });

  it('names the resource after OTEL_SERVICE_NAME, else the settings; adds OTEL_RESOURCE_ATTRIBUTES; sends OTEL_EXPORTER_OTLP_HEADERS', async () => {
    const r1 = await receiver();
    const r2 = await receiver();
    // Two tracings in one process, each with its own env: nothing global is shared.
    const named = on({
      OTEL_EXPORTER_OTLP_ENDPOINT: `${r1.url}/`,
      OTEL_SERVICE_NAME: 'edge-gateway',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=overridden,deployment.environment.name=staging,team=ml%20ops',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20one,x-tenant=a',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=b',
    });
    const defaulted = on({ OTEL_EXPORTER_OTLP_ENDPOINT: r2.url }, silent, 'infergate-gw');
    named.startRequest({}, { method: 'GET', path: '/', protocol: 'http' }).end(200);
    defaulted.startRequest({}, { method: 'GET', path: '/', protocol: 'http' }).end(200);
    await Promise.all([named.forceFlush(), defaulted.forceFlush()]);
    await expect.poll(() => r1.spans().length).toBe(1);
    await expect.poll(() => r2.spans().length).toBe(1);
    const [a] = r1.spans();
    expect(a!.serviceName).toBe('edge-gateway');
    expect(a!.resource).toMatchObject({ 'deployment.environment.name': 'staging', team: 'ml ops', 'telemetry.sdk.language': 'nodejs' });
    expect(r1.requests()[0]).toMatchObject({ authorization: 'Bearer one', 'x-tenant': 'b' });
    expect(r2.spans()[0]!.serviceName).toBe('infergate-gw');
    expect(r2.requests()[0]).not.toHaveProperty('authorization');
  });

  it('marks a 5xx request an error, not a 4xx; names a gRPC request after its method', async () => {
    const r = await receiver();
    const tracing = on({ OTEL_EXPORTER_OTLP_ENDPOINT: r.url });
    tracing.startRequest({}, { method: 'POST', path: '/v1/embeddings', protocol: 'http' }).end(503);
    tracing.startRequest({}, { method: 'POST', path: '/v1/embeddings', protocol: 'http' }).end(429);
    const grpc = tracing.startRequest({}, { method: 'POST', path: '/inference.GRPCInferenceService/ModelInfer', protocol: 'grpc' });
    grpc.attempt({ id: 3, address: '[::1]:8001' }, 1).end('responded');
    grpc.end(200);
    tracing.startRequest({}, { method: 'BREW', path: '/pot', protocol: 'http' }).end(405);
    await tracing.shutdown();
    const spans = r.spans();
    const failed = spans.find((s) => s.attributes['http.response.status_code'] === 503)!;
    expect(failed.statusCode).toBe(2);
    expect(failed.attributes['error.type']).toBe('503');
    const limited = spans.find((s) => s.attributes['http.response.status_code'] === 429)!;
    expect(limited.statusCode).toBe(0);
    expect(limited.attributes).not.toHaveProperty('error.type');
    const rpc = spans.filter((s) => s.name === 'inference.GRPCInferenceService/ModelInfer');
    expect(rpc.map((s) => s.kind).sort()).toEqual(['CLIENT', 'SERVER']);
    for (const s of rpc) expect(s.attributes).toMatchObject({ 'rpc.system.name': 'grpc', 'rpc.method': 'inference.GRPCInferenceService/ModelInfer' });
    expect(rpc.find((s) => s.kind === 'CLIENT')!.attributes).toMatchObject({ 'server.address': '::1', 'server.port': 8001 });
    const other = spans.find((s) => s.attributes['http.response.status_code'] === 405)!;
    expect(other.name).toBe('HTTP');
    expect(other.attributes).toMatchObject({ 'http.request.method': '_OTHER', 'http.request.method_original': 'BREW' });
  });

  it('logs an export that fails (collector down) and keeps serving', async () => {
    const r = await startOtlpReceiver();
    const url = r.url;
    await r.close();
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), cb()) });
    const tracing = on({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2000', OTEL_TRACES_SAMPLER: 'bogus' }, pino({ level: 'info' }, sink));
    expect(lines.map((l) => l.msg)).toEqual(['tracing: OTEL_TRACES_SAMPLER=bogus is not supported (one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio); using parentbased_always_on', 'tracing on: exporting spans over OTLP/HTTP']);
    const req = tracing.startRequest({}, { method: 'GET', path: '/', protocol: 'http' });
    expect(req.recording).toBe(true);
    req.end(200);
    await tracing.shutdown();
    await expect.poll(() => lines.some((l) => l.msg === 'tracing: could not export spans')).toBe(true);
  });
});

describe('tracing configuration', () => {
  it('finds the trace endpoint as the SDK does', () => {
    expect(tracesUrl({})).toBeUndefined();
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe('http://c:4318/v1/traces');
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/base/' })).toBe('http://c:4318/base/v1/traces');
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/custom' })).toBe('http://t:1/custom');
  });

  it('reads the sampler, its ratio and the batch settings, and reports what it ignored', () => {
    const config = tracingConfigFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_BSP_MAX_QUEUE_SIZE: 'lots',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    })!;
    expect(config.sampler).toEqual({ name: 'parentbased_traceidratio', ratio: 0.25 });
    expect(config.batch).toEqual({ scheduledDelayMillis: 200 });
    expect(config.warnings).toHaveLength(2);
    expect(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' })!.sampler).toEqual({ name: 'traceidratio', ratio: 1 });
    expect(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' })!.sampler).toEqual({ name: 'parentbased_always_on', ratio: 1 });
  });

  it('parses OTEL_RESOURCE_ATTRIBUTES, skipping only the bad entries', () => {
    const warnings: string[] = [];
    expect(parseResourceAttributes('a=1, b = two%2Cthree ,,bad,c=x=y,d=%E0%A4%A', warnings)).toEqual({ a: '1', b: 'two,three' });
    expect(warnings).toHaveLength(3);
  });

  it('splits replica addresses', () => {
    expect(splitAddress('127.0.0.1:8000')).toEqual({ host: '127.0.0.1', port: 8000 });
    expect(splitAddress('[::1]:8000')).toEqual({ host: '::1', port: 8000 });
    expect(splitAddress('replica-3')).toEqual({ host: 'replica-3', port: undefined });
    expect(splitAddress('::1')).toEqual({ host: '::1', port: undefined });
  });
});
