// Owns reading the standard OpenTelemetry environment variables for the gateway's tracing
// from an env object the caller passes (not process.env only), so a test — or two gateways in
// one process — can each have their own: whether tracing is on, the OTLP/HTTP trace endpoint
// and headers, the sampler, and the resource attributes. Where the SDK has a parser of its own
// (key=value lists) it is used; what the SDK reads from process.env alone is rebuilt here with
// the same rules.

import { parseKeyPairsIntoRecord } from '@opentelemetry/core';
import { envString, tracesUrl, tracingWanted } from './wanted.js';

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export interface SamplerConfig {
  name: SamplerName;
  /** The ratio of the traceidratio samplers, in [0, 1]. */
  ratio: number;
}

export interface TracingConfig {
  /** Where spans are POSTed (OTLP/HTTP, JSON). */
  url: string;
  headers: Record<string, string>;
  timeoutMillis: number | undefined;
  compression: 'gzip' | 'none' | undefined;
  sampler: SamplerConfig;
  /** OTEL_RESOURCE_ATTRIBUTES, decoded. */
  resourceAttributes: Record<string, string>;
  /** OTEL_SERVICE_NAME when set; it wins over everything else. */
  serviceName: string | undefined;
  /** OTEL_BSP_* (batch span processor) when set. */
  batch: { maxQueueSize?: number; maxExportBatchSize?: number; scheduledDelayMillis?: number; exportTimeoutMillis?: number };
  /** What was wrong with the environment: each is logged once at start, none is fatal. */
  warnings: string[];
}

function envNumber(env: NodeJS.ProcessEnv, name: string, warnings: string[]): number | undefined {
  const raw = envString(env, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) {
    warnings.push(`${name}=${raw} is not a number; ignored`);
    return undefined;
  }
  return value;
}

/**
 * OTEL_RESOURCE_ATTRIBUTES: `key=value,key=value`, keys and values percent-encoded. Unlike the
 * SDK's env detector, which drops the whole list for one bad entry, a bad entry alone is
 * skipped (and reported): one typo should not lose every other attribute.
 */
export function parseResourceAttributes(raw: string | undefined, warnings: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const entry of raw.split(',')) {
    if (entry.trim() === '') continue;
    const parts = entry.split('=');
    const key = parts[0]?.trim() ?? '';
    if (parts.length !== 2 || key === '') {
      warnings.push(`OTEL_RESOURCE_ATTRIBUTES entry "${entry}" is not key=value; skipped`);
      continue;
    }
    try {
      out[decodeURIComponent(key)] = decodeURIComponent(parts[1]!.trim());
    } catch {
      warnings.push(`OTEL_RESOURCE_ATTRIBUTES entry "${entry}" is not valid percent-encoding; skipped`);
    }
  }
  return out;
}

function samplerFromEnv(env: NodeJS.ProcessEnv, warnings: string[]): SamplerConfig {
  const raw = envString(env, 'OTEL_TRACES_SAMPLER');
  let name: SamplerName = 'parentbased_always_on';
  if (raw !== undefined) {
    if ((SAMPLERS as readonly string[]).includes(raw)) name = raw as SamplerName;
    else warnings.push(`OTEL_TRACES_SAMPLER=${raw} is not supported (one of ${SAMPLERS.join(', ')}); using parentbased_always_on`);
  }
  let ratio = 1;
  if (name === 'traceidratio' || name === 'parentbased_traceidratio') {
    const arg = envNumber(env, 'OTEL_TRACES_SAMPLER_ARG', warnings);
    if (arg === undefined) warnings.push(`OTEL_TRACES_SAMPLER_ARG is not set for ${name}; using 1`);
    else if (arg < 0 || arg > 1) warnings.push(`OTEL_TRACES_SAMPLER_ARG=${arg} is outside [0, 1]; using 1`);
    else ratio = arg;
  }
  return { name, ratio };
}

function compressionFromEnv(env: NodeJS.ProcessEnv, warnings: string[]): 'gzip' | 'none' | undefined {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_COMPRESSION', 'OTEL_EXPORTER_OTLP_COMPRESSION']) {
    const raw = envString(env, name);
    if (raw === undefined) continue;
    if (raw === 'gzip' || raw === 'none') return raw;
    warnings.push(`${name}=${raw} is not gzip or none; ignored`);
  }
  return undefined;
}

function timeoutFromEnv(env: NodeJS.ProcessEnv, warnings: string[]): number | undefined {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT']) {
    const value = envNumber(env, name, warnings);
    if (value === undefined) continue;
    if (value > 0) return value;
    warnings.push(`${name}=${value} is not greater than 0; ignored`);
  }
  return undefined;
}

/**
 * The tracing configuration, or null when tracing is off: no OTLP endpoint is set, or
 * OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none. The endpoint is returned unchecked.
 */
export function tracingConfigFromEnv(env: NodeJS.ProcessEnv): TracingConfig | null {
  const url = tracesUrl(env);
  if (url === undefined || !tracingWanted(env)) return null;
  const exporters = envString(env, 'OTEL_TRACES_EXPORTER')?.split(',').map((e) => e.trim());

  const warnings: string[] = [];
  if (exporters !== undefined && exporters.some((e) => e !== 'otlp' && e !== 'none')) {
    warnings.push(`OTEL_TRACES_EXPORTER=${exporters.join(',')}: only otlp is supported; exporting over OTLP/HTTP`);
  }
  const protocol = envString(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? envString(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined && protocol !== 'http/json') {
    warnings.push(`OTLP protocol ${protocol} is not supported; sending http/json (an OpenTelemetry Collector accepts both on its HTTP port)`);
  }
  // The signal-specific headers win over the general ones, key by key, as in the SDK.
  const headers = {
    ...parseKeyPairsIntoRecord(envString(env, 'OTEL_EXPORTER_OTLP_HEADERS')),
    ...parseKeyPairsIntoRecord(envString(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS')),
  };
  const batch: TracingConfig['batch'] = {};
  const bsp: [keyof TracingConfig['batch'], string][] = [
    ['maxQueueSize', 'OTEL_BSP_MAX_QUEUE_SIZE'],
    ['maxExportBatchSize', 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'],
    ['scheduledDelayMillis', 'OTEL_BSP_SCHEDULE_DELAY'],
    ['exportTimeoutMillis', 'OTEL_BSP_EXPORT_TIMEOUT'],
  ];
  for (const [key, name] of bsp) {
    const value = envNumber(env, name, warnings);
    if (value === undefined) continue;
    if (value > 0) batch[key] = value;
    else warnings.push(`${name}=${value} is not greater than 0; ignored`);
  }
  return {
    url,
    headers,
    timeoutMillis: timeoutFromEnv(env, warnings),
    compression: compressionFromEnv(env, warnings),
    sampler: samplerFromEnv(env, warnings),
    resourceAttributes: parseResourceAttributes(envString(env, 'OTEL_RESOURCE_ATTRIBUTES'), warnings),
    serviceName: envString(env, 'OTEL_SERVICE_NAME'),
    batch,
    warnings,
  };
}
