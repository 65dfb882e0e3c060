// Owns the gateway role of one process: its TLS certificate (the operator's, else one the
// platform CA issues), the gateway, its load reports to a shared store, and its listener.
// `serve` runs it in its own process, or each gateway worker runs it (gateway-worker.ts).

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ConfigError, type Config } from '../config/config.js';
import { settingsOf } from '../config/serve-flags.js';
import { endpointPathUrl, endpointUrl } from '../control/render.js';
import { pathAddressHost } from '../domain/endpoint-address.js';
import { createGateway, type Gateway } from '../gateway/gateway.js';
import { LoadPublisher } from '../gateway/load-publisher.js';
import type { CertificateAuthority } from '../pki/ca.js';
import { coversPathHost, loadOrIssueGatewayCertificate, readOperatorCertificate } from '../pki/server-certs.js';
import type { Store } from '../store/store.js';
import type { UsageLedger } from '../store/usage-ledger.js';
import { listen } from './listen.js';
import { packageVersion } from './version.js';
import type { Tracing } from '../tracing/tracing.js';
import { tracingWanted } from '../tracing/wanted.js';

/** What the gateway role needs of its process. */
export interface GatewayRoleContext {
  config: Config;
  store: Store;
  logger: Logger;
  /** Shutdown steps of the process, run in reverse order. */
  closers: Array<() => Promise<void>>;
  registry: Registry;
  usage: UsageLedger;
  ca: CertificateAuthority;
}

export interface StartedGateway {
  gateway: Gateway;
  /** This gateway's name among the publishers of load to the store. */
  publisher: string;
  port: number;
  /** What the start-up banner says about it. */
  lines: string[];
}

export interface GatewayCertificate {
  certPem: string;
  keyPem: string;
  /** The operator's certificate (--tls-cert), rather than one the platform CA issued. */
  operator: boolean;
}

/**
 * The operator's certificate for `*.<domain>`, checked before use, else the platform CA's
 * (issued on first start and kept in the certs directory, so every worker reads the same one;
 * it covers the path address's names too: localhost, 127.0.0.1, ::1).
 */
export async function gatewayCertificate(config: Config, ca: CertificateAuthority): Promise<GatewayCertificate> {
  if (config.tlsCert && config.tlsKey) {
    try {
      return { ...(await readOperatorCertificate(config.tlsCert, config.tlsKey, config.domain)), operator: true };
    } catch (err) {
      throw new ConfigError(`--tls-cert ${config.tlsCert}: ${(err as Error).message}`);
    }
  }
  return { ...(await loadOrIssueGatewayCertificate(ca, config.certsDir, config.domain)), operator: false };
}

/**
 * OpenTelemetry tracing when the standard OTEL_* variables ask for it (docs/tracing.md); the
 * SDK is loaded only then, so a gateway without it neither pays its start-up nor its cost per
 * request.
 */
async function tracingOf(logger: Logger): Promise<Tracing | null> {
  if (!tracingWanted(process.env)) return null;
  const { tracingFromEnv } = await import('../tracing/tracing.js');
  const tracing = tracingFromEnv(process.env, { serviceName: 'infergate', serviceVersion: packageVersion() }, logger.child({ component: 'tracing' }));
  if (tracing) logger.info('OpenTelemetry tracing is on (OTEL_EXPORTER_OTLP_*): one span per gateway request');
  return tracing;
}

export async function startGateway(ctx: GatewayRoleContext): Promise<StartedGateway> {
  const { config, store, logger, closers, registry, usage, ca } = ctx;
  const certificate = await gatewayCertificate(config, ca);
  const pathHost = pathAddressHost(config.domain);
  if (certificate.operator && !coversPathHost(certificate.certPem, pathHost)) {
    logger.warn({ tlsCert: config.tlsCert, host: pathHost }, `--tls-cert does not cover ${pathHost}: clients of the path address https://${pathHost}/endpoints/<name>/ will refuse the certificate; the host address works`);
  }
  const settings = settingsOf(config).gateway;
  const gateway = createGateway({
    store,
    domain: config.domain,
    certPem: certificate.certPem,
    keyPem: certificate.keyPem,
    ca,
    perHostCertificates: !certificate.operator,
    registry,
    timeouts: settings.upstream,
    loadFactor: settings.loadFactor,
    activator: settings.activator,
    ejection: settings.ejection,
    usage,
    connections: settings.connections,
    clientTimeouts: settings.clientTimeouts,
    body: settings.body,
    authFailures: settings.authFailures,
    logger: logger.child({ component: 'gateway' }),
    accessLog: config.accessLog,
    tracing: await tracingOf(logger),
    // Gateways on one Redis share each credential's rate limits there (docs/operations.md#rate-limits-on-redis).
    sharedLimits: config.redisUrl !== null ? new (await import('../store/redis-rate-limit.js')).RedisRateLimits({ url: config.redisUrl, prefix: config.redisPrefix }) : null,
  });
  await gateway.start();
  closers.push(() => gateway.close());
  // Other processes on a shared store (--redis) see this gateway's load through it.
  const publisher = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  if (config.redisUrl !== null) {
    const loads = new LoadPublisher(store, gateway, logger.child({ component: 'gateway' }), {
      publisher,
      intervalMs: settings.loadReports.intervalMs,
      ttlMs: settings.loadReports.ttlMs,
      windowSeconds: Math.ceil(config.autoscaleStableMs / 1000) + 2,
    });
    loads.start();
    closers.push(() => loads.stop());
  }
  const port = await listen(gateway.server, config.gatewayHost, config.gatewayPort, 'gateway-port', 'gateway');
  return { gateway, publisher, port, lines: gatewayBanner(config, port, certificate.operator) };
}

/**
 * The banner's gateway lines; `workers` says how many processes share the port. It names both
 * addresses and when to use the path one: `<name>.<domain>` needs wildcard DNS, which
 * getaddrinfo (so Python's and Node's SDKs) lacks for `*.localhost`.
 */
export function gatewayBanner(config: Config, port: number, operatorCertificate: boolean, workers = 1): string[] {
  const at = { domain: config.domain, port };
  const byHost = `https://${endpointUrl('<name>', at)}/`;
  const byPath = `${endpointPathUrl('<name>', at)!}/`;
  const host = pathAddressHost(config.domain);
  const certificate = operatorCertificate ? `certificate from ${config.tlsCert}` : `platform CA in ${config.certsDir}/ca.crt`;
  const processes = workers > 1 ? ` by ${workers} worker processes` : '';
  const why =
    host === 'localhost'
      ? `for SDKs and hosts without *.localhost DNS, ${byPath}`
      : `with one DNS record for ${host} rather than a wildcard, ${byPath}`;
  const caveat = operatorCertificate ? ` (where ${config.tlsCert} covers ${host})` : '';
  return [
    `infergate: gateway (TLS, h2 and http/1.1) listening on ${config.gatewayHost}:${port}${processes}; ${certificate}`,
    `infergate: endpoint domain ${config.domain}; endpoints at ${byHost} and, ${why}${caveat} (HTTP; gRPC by host only)`,
  ];
}
