// Owns the gateway's OpenTelemetry tracing: one SERVER span per client request (its parent
// taken from the request's W3C traceparent/tracestate), an event on it for each phase the
// request passes, a CLIENT child span for each attempt at a replica whose context is sent on to
// the replica, and the export of finished spans over OTLP/HTTP (JSON) through a batch
// processor. Configuration is the standard OTEL_* environment (config.ts), read from the env
// object the caller passes.
//
// Nothing here is global: no tracer provider, context manager or propagator is registered with
// the OpenTelemetry API, so two gateways in one process keep their own; and nothing is started
// unless tracing is on — with it off, tracingFromEnv returns null and the gateway holds null.

import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type Tracer,
  TraceFlags,
  isSpanContextValid,
} from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  type IdGenerator,
  SamplingDecision,
} from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_RPC_METHOD,
  ATTR_RPC_SYSTEM_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
  RPC_SYSTEM_NAME_VALUE_GRPC,
} from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import { tracingConfigFromEnv, type SamplerConfig, type TracingConfig } from './config.js';

export { tracingWanted } from './wanted.js';

// GenAI attributes are still incubating in the semantic conventions; the OpenTelemetry JS
// guidance is to copy incubating names rather than import them (they may change in a minor).
/** Prompt tokens (cached ones included). */
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
/** Completion tokens. */
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
/** Prompt tokens served from the engine's prefix cache. */
export const ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = 'gen_ai.usage.cache_read.input_tokens';
/** Seconds from the request's arrival at the gateway to its first response body byte leaving it. */
export const ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = 'gen_ai.response.time_to_first_chunk';
/** The replica an attempt went to, and which attempt of the request it was (1 for the first). */
export const ATTR_REPLICA_ID = 'infergate.replica.id';
export const ATTR_ATTEMPT = 'infergate.attempt';
/** How an attempt ended: 'responded', 'connection_failed', 'cancelled', ... */
export const ATTR_ATTEMPT_OUTCOME = 'infergate.attempt.outcome';

/** The instrumentation scope of every span here. */
export const TRACER_NAME = 'infergate.gateway';

/** Attempt outcomes that are not errors: the replica answered, or the client went away. */
const QUIET_OUTCOMES: ReadonlySet<string> = new Set(['responded', 'cancelled']);

export interface TracingSettings {
  /** The service name unless OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) is set; default 'infergate'. */
  serviceName?: string;
  /** service.version on the resource (unless OTEL_RESOURCE_ATTRIBUTES sets it). */
  serviceVersion?: string;
}

export interface Tracing {
  /** Starts the SERVER span of one gateway request; parent from the incoming traceparent/tracestate (W3C) when present. */
  startRequest(
    headers: { traceparent?: string | string[]; tracestate?: string | string[] },
    attrs: { method: string; path: string; protocol: 'http' | 'grpc' },
  ): RequestTrace;
  /** Exports every span ended so far (tests; a gateway need not call it). */
  forceFlush(): Promise<void>;
  /** Flushes and stops the exporter (gateway close). Idempotent. */
  shutdown(): Promise<void>;
}

export interface RequestTrace {
  /** True when sampled (recording): callers may skip building attributes otherwise. */
  readonly recording: boolean;
  /** A phase reached: an event on the request span ('route', 'authenticated', 'admitted', 'queued', 'released', 'selected', ...). */
  phase(name: string, attrs?: Record<string, string | number | boolean>): void;
  /** Attributes on the request span (deployment, GenAI attributes, ...); undefined values are skipped. */
  set(attrs: Record<string, string | number | boolean | undefined>): void;
  /**
   * One attempt at a replica (n = 1 for the first): a CLIENT child span. Its headers — the
   * traceparent, and the tracestate when there is one, as a flat [name, value, ...] array —
   * make the attempt span the replica's parent; a request the sampler dropped has none, and
   * passes the client's own trace context, if any, as it came.
   */
  attempt(replica: { id: number; address: string }, n: number): AttemptTrace;
  /** The first byte of the response body reached the client: event 'first_byte' and gen_ai.response.time_to_first_chunk (seconds). Once. */
  firstByte(secondsSinceStart: number): void;
  /** The request ended: status code, error status for >= 500, token usage when given; ends the span. Idempotent. */
  end(status: number, usage?: { prompt: number; completion: number; cached?: number } | null): void;
}

export interface AttemptTrace {
  /**
   * The trace context for the replica, to send instead of the client's; null when the request
   * is not sampled — the client's own traceparent and tracestate, if any, go on unchanged.
   */
  readonly headers: readonly string[] | null;
  /**
   * The attempt ended. Any outcome but 'responded' or 'cancelled' is an error (error status,
   * error.type = outcome). `status`, when given, is the replica's response status. Idempotent.
   */
  end(outcome: string, status?: number): void;
}

/**
 * On when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (non-empty)
 * in env — unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, or the endpoint is not
 * an http(s) URL (logged as an error); else returns null. tracingWanted(env) tells the same
 * without loading OpenTelemetry.
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv, settings: TracingSettings, log: Logger): Tracing | null {
  const config = tracingConfigFromEnv(env);
  if (config === null) return null;
  // A mistyped endpoint turns tracing off, loudly, rather than stopping the gateway.
  if (!isHttpUrl(config.url)) {
    log.error({ endpoint: config.url }, 'tracing: the OTLP trace endpoint is not an http(s) URL; tracing is off');
    return null;
  }
  for (const warning of config.warnings) log.warn(`tracing: ${warning}`);
  const tracing = new OtelTracing(config, settings, log);
  log.info(
    { endpoint: config.url, sampler: config.sampler.name, ratio: config.sampler.ratio, serviceName: tracing.serviceName },
    'tracing on: exporting spans over OTLP/HTTP',
  );
  return tracing;
}

function isHttpUrl(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function samplerFor(config: SamplerConfig): Sampler {
  switch (config.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(config.ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.ratio) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** Precedence, lowest first: the SDK's defaults, the settings, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME. */
function resourceFor(config: TracingConfig, settings: TracingSettings): Resource {
  const own: Attributes = { [ATTR_SERVICE_NAME]: settings.serviceName ?? 'infergate' };
  if (settings.serviceVersion !== undefined) own[ATTR_SERVICE_VERSION] = settings.serviceVersion;
  let resource = defaultResource().merge(resourceFromAttributes(own)).merge(resourceFromAttributes(config.resourceAttributes));
  if (config.serviceName !== undefined) resource = resource.merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }));
  return resource;
}

type CompressionOption = NonNullable<NonNullable<ConstructorParameters<typeof OTLPTraceExporter>[0]>['compression']>;

/** Logs failed exports — the SDK reports them only to its global diagnostic logger, unset here. */
class LoggingExporter implements SpanExporter {
  private failing = false;
  private lastWarnAt = 0;
  private dropped = 0;

  constructor(
    private readonly inner: SpanExporter,
    private readonly log: Logger,
    private readonly url: string,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code === ExportResultCode.SUCCESS) {
        if (this.failing) this.log.info({ endpoint: this.url }, 'tracing: exporting spans again');
        this.failing = false;
        this.dropped = 0;
      } else {
        this.dropped += spans.length;
        const now = Date.now();
        // A down collector fails every batch: warn on the first failure, then once a minute.
        if (!this.failing || now - this.lastWarnAt >= 60_000) {
          this.log.warn({ endpoint: this.url, err: result.error, droppedSpans: this.dropped }, 'tracing: could not export spans');
          this.lastWarnAt = now;
          this.dropped = 0;
        }
        this.failing = true;
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

const propagator = new W3CTraceContextPropagator();

type IncomingHeaders = { traceparent?: string | string[]; tracestate?: string | string[] };

const headerGetter: TextMapGetter<IncomingHeaders> = {
  get: (carrier, key) => (key === 'traceparent' ? carrier.traceparent : key === 'tracestate' ? carrier.tracestate : undefined),
  keys: () => ['traceparent', 'tracestate'],
};


/**
 * The headers that carry `span` on to a replica: W3C traceparent (and tracestate when there is
 * one), written from the span's own context — ids this process made or already validated on
 * extraction — rather than through the propagator, whose checks showed in the gateway's
 * profile (with tracing at 1 %, every request pays for this).
 */
function outgoingHeaders(span: Span): string[] {
  const c = span.spanContext();
  const headers = ['traceparent', `00-${c.traceId}-${c.spanId}-${c.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`];
  const state = c.traceState?.serialize();
  if (state) headers.push('tracestate', state);
  return headers;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Four random bytes as eight hex digits. */
function hex32(): string {
  const n = (Math.random() * 0x100000000) >>> 0;
  return HEX[n >>> 24]! + HEX[(n >>> 16) & 0xff]! + HEX[(n >>> 8) & 0xff]! + HEX[n & 0xff]!;
}

/**
 * Random ids as the SDK's own generator makes them (Math.random), without its Buffer and hex
 * conversion per id. Never all zeros: an all-zero id is invalid in W3C trace context.
 */
const fastIds: IdGenerator & { preset: string | null } = {
  /** A trace id startRequest already sampled on: the SDK's span gets that one. */
  preset: null,
  generateTraceId: () => {
    if (fastIds.preset !== null) {
      const preset = fastIds.preset;
      fastIds.preset = null;
      return preset;
    }
    const id = hex32() + hex32() + hex32() + hex32();
    return id === '00000000000000000000000000000000' ? fastIds.generateTraceId() : id;
  },
  generateSpanId: () => {
    const id = hex32() + hex32();
    return id === '0000000000000000' ? fastIds.generateSpanId() : id;
  },
};

const HTTP_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);

/** What a request's spans are named and carry from its start. */
interface RequestShape {
  /** The server span's name, and each attempt span's. */
  name: string;
  grpc: boolean;
  /** HTTP: the method as the conventions want it (or _OTHER); gRPC: the method path. */
  method: string;
  methodOriginal: string | undefined;
  path: string;
}

function requestShape(attrs: { method: string; path: string; protocol: 'http' | 'grpc' }): RequestShape {
  const q = attrs.path.indexOf('?');
  const path = q === -1 ? attrs.path : attrs.path.slice(0, q);
  if (attrs.protocol === 'grpc') {
    // gRPC's path is /package.Service/Method; the conventions name the span after package.Service/Method.
    const method = path.startsWith('/') ? path.slice(1) : path;
    return { name: method, grpc: true, method, methodOriginal: undefined, path };
  }
  const known = HTTP_METHODS.has(attrs.method);
  // The conventions name an HTTP server span by its method alone when, as here, there is no
  // low-cardinality route template: a path is chosen by the client.
  return { name: known ? attrs.method : 'HTTP', grpc: false, method: known ? attrs.method : '_OTHER', methodOriginal: known ? undefined : attrs.method, path };
}

class OtelTracing implements Tracing {
  readonly serviceName: string;
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly sampler: Sampler;
  private stopping: Promise<void> | null = null;

  constructor(config: TracingConfig, settings: TracingSettings, private readonly log: Logger) {
    const resource = resourceFor(config, settings);
    this.serviceName = String(resource.attributes[ATTR_SERVICE_NAME]);
    const exporter = new OTLPTraceExporter({
      url: config.url,
      headers: config.headers,
      timeoutMillis: config.timeoutMillis,
      compression: config.compression as CompressionOption | undefined,
    });
    const processor = new BatchSpanProcessor(new LoggingExporter(exporter, log, config.url), config.batch);
    this.sampler = samplerFor(config.sampler);
    this.provider = new BasicTracerProvider({ resource, sampler: this.sampler, spanProcessors: [processor], idGenerator: fastIds });
    this.tracer = this.provider.getTracer(TRACER_NAME, settings.serviceVersion);
  }

  startRequest(headers: IncomingHeaders, attrs: { method: string; path: string; protocol: 'http' | 'grpc' }): RequestTrace {
    const parent = headers.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, headerGetter);
    // The sampler decides first, on the trace id the span would get (the caller's, or a new
    // one handed to the SDK through the id generator), as the SDK itself would: a request it
    // drops costs no span, no context and no rewritten headers — the client's trace context,
    // if any, reaches the replica as it came. With tracing at 1 %, that is 99 requests in 100.
    const remote = trace.getSpanContext(parent);
    const traceId = remote !== undefined && isSpanContextValid(remote) ? remote.traceId : fastIds.generateTraceId();
    const shape = requestShape(attrs);
    if (this.sampler.shouldSample(parent, traceId, shape.name, SpanKind.SERVER, {}, []).decision === SamplingDecision.NOT_RECORD) return UNSAMPLED;
    if (traceId !== remote?.traceId) fastIds.preset = traceId;
    const span = this.tracer.startSpan(shape.name, { kind: SpanKind.SERVER }, parent);
    fastIds.preset = null;
    return new RequestSpan(this.tracer, span, shape);
  }

  async forceFlush(): Promise<void> {
    await this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    this.stopping ??= this.provider.shutdown().catch((err: unknown) => {
      this.log.warn({ err }, 'tracing: shutdown failed');
    });
    return this.stopping;
  }
}

/** A request the sampler kept: its span records (startRequest decided before making it). */
class RequestSpan implements RequestTrace {
  readonly recording = true;
  private ended = false;
  private sawFirstByte = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
    private readonly shape: RequestShape,
  ) {
    // Set after sampling, not passed to startSpan: a dropped request never builds them (the
    // standard samplers do not look at attributes).
    const a: Attributes = { [ATTR_URL_PATH]: shape.path };
    if (shape.grpc) {
      a[ATTR_RPC_SYSTEM_NAME] = RPC_SYSTEM_NAME_VALUE_GRPC;
      a[ATTR_RPC_METHOD] = shape.method;
    } else {
      a[ATTR_HTTP_REQUEST_METHOD] = shape.method;
      if (shape.methodOriginal !== undefined) a[ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = shape.methodOriginal;
    }
    span.setAttributes(a);
  }

  phase(name: string, attrs?: Record<string, string | number | boolean>): void {
    if (this.ended) return;
    this.span.addEvent(name, attrs);
  }

  set(attrs: Record<string, string | number | boolean | undefined>): void {
    if (this.ended) return;
    for (const key in attrs) {
      const value = attrs[key];
      if (value !== undefined) this.span.setAttribute(key, value);
    }
  }

  attempt(replica: { id: number; address: string }, n: number): AttemptTrace {
    if (this.ended) return NO_ATTEMPT;
    const a: Attributes = { [ATTR_REPLICA_ID]: replica.id, [ATTR_ATTEMPT]: n };
    const { host, port } = splitAddress(replica.address);
    a[ATTR_SERVER_ADDRESS] = host;
    if (port !== undefined) a[ATTR_SERVER_PORT] = port;
    if (this.shape.grpc) {
      a[ATTR_RPC_SYSTEM_NAME] = RPC_SYSTEM_NAME_VALUE_GRPC;
      a[ATTR_RPC_METHOD] = this.shape.method;
    } else {
      a[ATTR_HTTP_REQUEST_METHOD] = this.shape.method;
      if (n > 1) a[ATTR_HTTP_REQUEST_RESEND_COUNT] = n - 1;
    }
    const child = this.tracer.startSpan(this.shape.name, { kind: SpanKind.CLIENT, attributes: a }, trace.setSpan(ROOT_CONTEXT, this.span));
    return new AttemptSpan(child, outgoingHeaders(child));
  }

  firstByte(secondsSinceStart: number): void {
    if (this.ended || this.sawFirstByte) return;
    this.sawFirstByte = true;
    this.span.addEvent('first_byte');
    this.span.setAttribute(ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, secondsSinceStart);
  }

  end(status: number, usage?: { prompt: number; completion: number; cached?: number } | null): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    // A server span's 4xx is the client's error, not the server's: only 5xx marks it failed.
    if (status >= 500) {
      span.setAttribute(ATTR_ERROR_TYPE, String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    if (usage) {
      span.setAttribute(ATTR_GEN_AI_USAGE_INPUT_TOKENS, usage.prompt);
      span.setAttribute(ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, usage.completion);
      if (usage.cached !== undefined) span.setAttribute(ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, usage.cached);
    }
    span.end();
  }
}

/** No attempt span: the client's own trace context, if any, goes to the replica unchanged. */
const NO_ATTEMPT: AttemptTrace = { headers: null, end: () => undefined };

/** A request the sampler dropped: nothing recorded, and the client's trace headers pass as they came. */
const UNSAMPLED: RequestTrace = {
  recording: false,
  phase: () => undefined,
  set: () => undefined,
  attempt: () => NO_ATTEMPT,
  firstByte: () => undefined,
  end: () => undefined,
};

class AttemptSpan implements AttemptTrace {
  private ended = false;

  constructor(
    private readonly span: Span,
    readonly headers: readonly string[],
  ) {}

  end(outcome: string, status?: number): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    span.setAttribute(ATTR_ATTEMPT_OUTCOME, outcome);
    if (status !== undefined) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (!QUIET_OUTCOMES.has(outcome)) {
      span.setAttribute(ATTR_ERROR_TYPE, outcome);
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    }
    span.end();
  }
}

/** `host:port`, `[v6]:port` or a bare host, as the routing table holds replica addresses. */
export function splitAddress(address: string): { host: string; port: number | undefined } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(address);
  if (v6) return { host: v6[1]!, port: v6[2] === undefined ? undefined : Number(v6[2]) };
  const colon = address.lastIndexOf(':');
  // More than one colon and no brackets: a bare IPv6 address without a port.
  if (colon === -1 || address.indexOf(':') !== colon) return { host: address, port: undefined };
  const port = Number(address.slice(colon + 1));
  return Number.isInteger(port) && port > 0 && port < 65536 ? { host: address.slice(0, colon), port } : { host: address, port: undefined };
}
