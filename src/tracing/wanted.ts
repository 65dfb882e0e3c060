// Owns the one question asked of the environment before anything of OpenTelemetry is loaded:
// is tracing on at all? It imports nothing, so a gateway can ask it and load the SDK (some
// 150 ms of module loading) with import() only when the answer is yes.

/** A variable's value, or undefined when unset or blank (the SDK treats blank as unset too). */
export function envString(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** The OTLP trace endpoint: the signal-specific one as-is, else the base one + `/v1/traces`. */
export function tracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  const specific = envString(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (specific !== undefined) return specific;
  const base = envString(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (base === undefined) return undefined;
  return `${base.endsWith('/') ? base : `${base}/`}v1/traces`;
}

/**
 * Whether tracing is on: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT), the SDK is not disabled (OTEL_SDK_DISABLED=true) and the
 * traces exporter is not `none` (OTEL_TRACES_EXPORTER). tracingFromEnv returns null exactly
 * when this is false.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (tracesUrl(env) === undefined) return false;
  if (envString(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return false;
  const exporters = envString(env, 'OTEL_TRACES_EXPORTER')?.split(',').map((e) => e.trim());
  return exporters === undefined || !exporters.every((e) => e === 'none');
}
