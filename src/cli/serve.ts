// Owns `infergate serve`: the composition root that wires config, store, control API,
// gateway (in this process, or in --gateway-workers processes), controller with its local
// runtime, and the metrics listener (with replica service discovery) together, prints where
// everything is, and shuts down cleanly on SIGINT/SIGTERM: the Docker runtime's replicas are
// left running for the next start (their network and the replica directories' mounts with
// them) unless --drain-on-stop, the local runtime's are drained and stopped first. Wiring only
// — behaviour lives in the modules it composes.

import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Server } from 'node:net';
import { pino, type Logger } from 'pino';
import { systemClock } from '../core/clock.js';
import { Sealer } from '../core/secrets.js';
import { Gauge, type Registry } from 'prom-client';
import { ConfigError, type Config, type OidcConfig } from '../config/config.js';
import type { IdentityService } from '../identity/identity.js';
import { settingsOf } from '../config/serve-flags.js';
import { DEFAULT_CATALOG, parseCatalog, type Catalog } from '../domain/catalog.js';
import type { HostCommandPolicy } from '../domain/host-commands.js';
import { gpusPerReplica, hardwareOfReplica } from '../domain/quota.js';
import { UsageLedger } from '../store/usage-ledger.js';
import { StoreMonitor } from '../store/store-monitor.js';
import { buildControlApp, type ControlApp } from '../control/app.js';
import { defaultConsoleDir } from '../control/console-assets.js';
import { fileLogSource } from '../runtime/log-source.js';
import type { RevisionMetricsSource, ShellProvider } from '../domain/ports.js';
import { ActivityRecorder } from '../autoscaler/activity.js';
import { Autoscaler } from '../autoscaler/autoscaler.js';
import { StoreLoad } from '../autoscaler/store-load.js';
import { Controller } from '../controller/controller.js';
import { LocalLeftovers } from '../controller/leftovers.js';
import { DEFAULT_IMAGE_MAP, parseImageMap, type ImageMap } from '../domain/image-map.js';
import type { Gateway } from '../gateway/gateway.js';
import { replicaTargetGroups, SERVICE_DISCOVERY_PATH } from '../metrics/service-discovery.js';
import { guardReplicaDirs, tightenDir } from '../runtime/host-dirs.js';
import { runtimeDirs } from '../runtime/local-runtime.js';
import type { Runtime } from '../runtime/runtime.js';
import { chooseRuntime, keepsReplicasOnStop, stopLine, stoppedLine } from './runtime-choice.js';
import { detectSandbox } from '../runtime/sandbox-probe.js';
import { detectReplicaNetwork } from '../runtime/pods.js';
import { selfCommand } from './self-command.js';
import { clusterExposition } from '../metrics/cluster.js';
import { createMetricsServer, createRegistry } from '../metrics/registry.js';
import { ConnectionGuard } from '../net/connection-guard.js';
import { capsWarning, openFileLimit } from '../net/file-limit.js';
import { countAccepted, listenerMeters } from '../net/metrics.js';
import { meterListener } from '../net/server-meters.js';
import { loadOrCreateCa, type CertificateAuthority } from '../pki/ca.js';
import { FileStore } from '../store/file-store.js';
import type { Store } from '../store/store.js';
import { loadSealingKey } from './key-files.js';
import { ensureAdminKey } from './admin-key.js';
import { gatewayBanner, gatewayCertificate, startGateway } from './gateway-role.js';
import { GatewayWorkers } from './gateway-workers.js';
import { checkPorts, listen, type PlannedListener } from './listen.js';
import { HostRegistryGate } from '../net/registry-gate.js';

export interface RunningService {
  metricsPort: number;
  stop(): Promise<void>;
}

/** The ports this process binds, by role. */
function plannedListeners(config: Config): PlannedListener[] {
  return [
    ...(config.role !== 'gateway' ? [{ host: config.apiHost, port: config.apiPort, flag: 'api-port', what: 'control API' }] : []),
    ...(config.role !== 'control' ? [{ host: config.gatewayHost, port: config.gatewayPort, flag: 'gateway-port', what: 'gateway' }] : []),
    { host: config.metricsHost, port: config.metricsPort, flag: 'metrics-port', what: 'metrics' },
  ];
}

export async function serve(config: Config, out: (line: string) => void): Promise<RunningService> {
  // Every port first: a start that cannot listen must not have written anything (an admin
  // account whose key was never shown locks everyone out).
  await checkPorts(plannedListeners(config));
  const logger = pino({ level: config.logLevel, base: { service: 'infergate' } });
  // Before anything is read or written there: an existing directory may have been made by hand, 0755.
  const tightened = [tightenDir(config.dataDir, 'data directory'), tightenDir(config.certsDir, 'certificate directory')].filter((l): l is string => l !== null);
  for (const line of tightened) logger.warn(line);
  // ioredis is loaded only when a Redis is named: a start on the file store skips its cost.
  const store: Store = config.redisUrl
    ? new (await import('../store/redis-store.js')).RedisStore({ url: config.redisUrl, prefix: config.redisPrefix })
    : new FileStore({ dir: config.dataDir, logger: logger.child({ component: 'store' }) });
  await store.open();
  const closers: Array<() => Promise<void>> = [() => store.close()];
  // One usage ledger per process (gateway requests, controller replica lifetimes); flushed
  // last, just before the store closes.
  const usage = new UsageLedger(store);
  usage.start();
  closers.push(() => usage.stop());
  const stop = async () => {
    for (const close of [...closers].reverse()) await close().catch((err: Error) => logger.warn({ err }, 'shutdown step failed'));
  };
  try {
    const lines: string[] = [...tightened];
    // Loaded once, for every role of this process that needs them.
    const shared: Shared = {
      config,
      store,
      logger,
      out,
      kept: { replicas: 0 },
      closers,
      registry: createRegistry(),
      usage,
      images: await loadImageMap(config.imageMapFile),
      catalog: await loadCatalog(config.catalogFile),
      ca: await loadOrCreateCa(config.certsDir),
      sealer: config.role !== 'gateway' ? new Sealer(await loadSealingKey(config.dataDir, process.env.INFERGATE_SECRET_KEY)) : null,
      // This service's own ports are never a registry: the configured ones now, the bound ones as each listener starts.
      registries: new HostRegistryGate({ listed: config.registries, ports: plannedListeners(config).map((l) => l.port) }),
    };
    const { registry } = shared;
    const monitor = new StoreMonitor(store, registry, logger.child({ component: 'store' }));
    monitor.start();
    closers.push(() => monitor.stop());
    // The gateway first: it routes by the store's records alone, so after a restart it answers
    // for replicas left running while the sandbox is probed and the Docker daemon asked (which
    // may take seconds). It closes last (closers run in reverse), after the replicas drained.
    let gateway: LocalGateway | null = null;
    let workers: GatewayWorkers | null = null;
    if (config.role !== 'control' && config.gatewayWorkers > 1) {
      // The gateway runs in worker processes; this one keeps the control role, if it has it.
      workers = new GatewayWorkers({ config, count: config.gatewayWorkers, logger: logger.child({ component: 'gateway-workers' }), registry });
      const running = workers;
      // Issued here, before forking, so the workers read one certificate instead of racing to write it.
      const certificate = await gatewayCertificate(config, shared.ca);
      closers.push(() => running.stop());
      const port = await running.start();
      shared.registries.addOwnPort(port);
      logger.info({ pids: running.pids() }, 'gateway workers started');
      lines.push(...gatewayBanner(config, port, certificate.operator, config.gatewayWorkers));
    } else if (config.role !== 'control') {
      const started = await startGateway(shared);
      shared.registries.addOwnPort(started.port);
      gateway = { gateway: started.gateway, publisher: started.publisher };
      lines.push(...started.lines);
    }
    // The control API opens terminals in the controller's replicas; the controller starts later.
    const shells: LateShells = {
      controller: null,
      shellRefusal: () => shells.controller?.shellRefusal() ?? null,
      shellTarget: (id, replica) => shells.controller?.shellTarget(id, replica) ?? null,
    };
    // The replica sandbox is probed once, before anything can deploy: the control API's rule
    // for host commands depends on it, and the controller's runtime uses it.
    const sandbox = config.role !== 'gateway' ? detectSandbox(config, selfCommand()) : null;
    // The autoscaler runs with the control role (it reads the gateways' load, here and through
    // the store), and so does its activity history.
    const activity = config.role !== 'gateway' ? new ActivityRecorder(systemClock) : null;
    // The per-revision figures are the autoscaler's load (StoreLoad), made with the controller, after the control API.
    const revisionMetrics: LateRevisionMetrics | null =
      config.role !== 'gateway' ? { load: null, revisions: (id, windowSeconds) => revisionMetrics?.load?.revisions(id, windowSeconds) ?? [] } : null;
    if (sandbox !== null) lines.push(sandbox.description);
    if (config.role !== 'gateway') {
      // Unmounted after the controller has stopped every replica (closers run in reverse).
      const { replicasDir, cacheDir } = runtimeDirs(config.dataDir);
      const guard = await guardReplicaDirs([replicasDir, cacheDir], logger.child({ component: 'runtime' }));
      // Kept mounted while replicas left running write there (as after a kill -9: the next start reuses the mounts).
      closers.push(() => (shared.kept.replicas > 0 ? Promise.resolve() : guard.release()));
      lines.push(...guard.lines);
    }
    // Pods need the sandbox's root (nothing else keeps a replica in its namespace).
    const network = sandbox !== null ? detectReplicaNetwork(config, sandbox.host) : null;
    // Chosen before the control API starts: whether images run in containers decides its rule for host commands.
    const chosen =
      config.role !== 'gateway'
        ? await chooseRuntime(config, shared.images, sandbox?.host ?? null, network?.pods ?? null, logger.child({ component: 'runtime' }), shared.registries)
        : null;
    if (chosen !== null) {
      lines.push(chosen.line);
      // Under Docker every replica is a container: the local runtime's pods do not apply.
      if (chosen.kind === 'local' && network !== null) lines.push(...network.lines);
      // Pushed before the controller's step, so it runs after the replicas are stopped (or left running).
      closers.push(() => chosen.close(shared.kept.replicas));
      lines.push(stopLine(chosen, config));
    }
    if (chosen?.kind === 'docker') lines.push(`infergate: the daemon pulls from ${registriesWords(config.registries)} (--registries)`);
    if (config.role !== 'gateway') {
      const hostCommands: HostCommandPolicy = {
        sandboxed: sandbox?.sandboxed ?? false,
        allowUnsandboxed: config.allowUnsandboxedHostCommands,
        allowMembers: config.allowMemberHostCommands,
        containers: chosen?.kind === 'docker',
      };
      lines.push(...(await startControl(shared, shells, hostCommands, activity, revisionMetrics)));
    }
    // The controller and its runtime live with the control role: one per store.
    if (chosen !== null) shells.controller = await startController(shared, gateway, chosen.runtime, activity, revisionMetrics);

    const exposition = workers === null ? registry : clusterExposition(registry, workers);
    const metrics = createMetricsServer(exposition, { [SERVICE_DISCOVERY_PATH]: () => replicaTargetGroups(store) });
    countAccepted(metrics, registry, 'metrics');
    closers.push(() => new Promise<void>((resolve) => metrics.close(() => resolve())));
    const metricsPort = await listen(metrics, config.metricsHost, config.metricsPort, 'metrics-port', 'metrics');
    shared.registries.addOwnPort(metricsPort);
    lines.push(`infergate: metrics on http://${hostForUrl(config.metricsHost)}:${metricsPort}/metrics; replica targets for Prometheus http_sd at ${SERVICE_DISCOVERY_PATH}`);
    lines.push(`infergate: state in ${config.redisUrl ? 'Redis' : config.dataDir}`);
    const caps = [config.role !== 'control' ? config.limits.gateway.maxConnections : null, config.role !== 'gateway' ? config.limits.api.maxConnections : null];
    const fdWarning = capsWarning(openFileLimit(), caps.filter((c): c is number => c !== null));
    if (fdWarning) lines.push(fdWarning);
    for (const line of lines) out(line);
    logger.info({ role: config.role, metricsPort, domain: config.domain }, 'infergate started');
    return { metricsPort, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

type Closers = Array<() => Promise<void>>;

/** What the roles of one process share, each loaded or made once. */
interface Shared {
  config: Config;
  store: Store;
  logger: Logger;
  /** Where the banner and the stop's own line go (stdout). */
  out: (line: string) => void;
  /** Replicas the controller left running at its stop: their network and directories' mounts stay for them. */
  kept: { replicas: number };
  /** Shutdown steps, run in reverse order. */
  closers: Closers;
  registry: Registry;
  usage: UsageLedger;
  images: ImageMap;
  catalog: Catalog;
  ca: CertificateAuthority;
  /** The key that seals secrets at rest; null in a gateway-only process, which needs none. */
  sealer: Sealer | null;
  /** Which registry hosts the container daemon may pull from: asked by the control API and the image puller. */
  registries: HostRegistryGate;
}

function sealerOf(shared: Shared): Sealer {
  if (shared.sealer === null) throw new Error('this role needs the sealing key, and it was not loaded');
  return shared.sealer;
}

type LateShells = ShellProvider & { controller: Controller | null };
type LateRevisionMetrics = RevisionMetricsSource & { load: RevisionMetricsSource | null };

async function startControl(
  shared: Shared,
  shells: ShellProvider,
  hostCommands: HostCommandPolicy,
  activity: ActivityRecorder | null,
  revisionMetrics: RevisionMetricsSource | null,
): Promise<string[]> {
  const { config, store, logger, closers, registry, images, catalog, ca, registries } = shared;
  const { logsDir } = runtimeDirs(config.dataDir);
  const api = settingsOf(config).api;
  // People sign in through the identity provider when one is configured (src/identity/).
  const identity = config.oidc ? await startIdentity(config, config.oidc, store, sealerOf(shared), logger) : null;
  if (identity) closers.push(async () => identity.close());
  const app = await buildControlApp({
    store,
    catalog,
    images,
    logs: fileLogSource(logsDir),
    shells,
    activity,
    revisionMetrics,
    hostCommands,
    registries,
    gpuQuota: config.gpuQuota,
    sealer: sealerOf(shared),
    clock: systemClock,
    endpoint: { domain: config.domain, port: config.gatewayPort },
    ca,
    logger: logger.child({ component: 'control' }),
    https: await readApiTls(config),
    timeouts: api.timeouts,
    sessions: identity,
    identity,
  });
  // The control API shares this process's file descriptors with the gateway: its own caps
  // keep a flood of either from starving the other.
  const apiMeters = listenerMeters(registry, 'api');
  new ConnectionGuard(api.connections, apiMeters).attach(app.server as Server);
  meterListener(app.server, apiMeters);
  closers.push(() => app.close());
  const apiPort = await listen(app.server as Server, config.apiHost, config.apiPort, 'api-port', 'control API');
  registries.addOwnPort(apiPort);
  await app.ready();
  // Once the API listens: a start that fails before this point has made no account.
  const adminLine = await ensureAdminKey(store, { dataDir: config.dataDir, redisUrl: config.redisUrl, fixedKey: config.adminKey, fixedKeyFile: config.adminKeyFile });
  const scheme = config.apiTlsCert ? 'https' : 'http';
  const apiUrl = `${scheme}://${hostForUrl(config.apiHost)}:${apiPort}`;
  identity?.listeningAt(apiUrl);
  const consoleLine = existsSync(path.join(defaultConsoleDir(), 'index.html'))
    ? `infergate: web console at ${apiUrl}/ (sign in with the admin key, or any service-account key)`
    : 'infergate: the web console is not built (npm run build); the API works without it';
  const signInLine = identity
    ? [`infergate: people sign in through ${config.oidc?.issuer ?? ''} (redirect URI ${identity.redirectUri()})`]
    : [];
  return [`infergate: control API listening on ${apiUrl}`, consoleLine, ...signInLine, adminLine];
}

/** The identity provider's client and the sessions of people (loaded only when configured). */
async function startIdentity(config: Config, oidc: OidcConfig, store: Store, sealer: Sealer, logger: Logger): Promise<IdentityService> {
  const { IdentityService } = await import('../identity/identity.js');
  return new IdentityService(
    { store, sealer, clock: systemClock, logger: logger.child({ component: 'identity' }) },
    {
      oidc: { issuer: oidc.issuer, clientId: oidc.clientId, clientSecret: oidc.clientSecret, groupsClaim: oidc.groupsClaim, scopes: oidc.scopes },
      adminGroup: oidc.adminGroup,
      providerName: oidc.providerName,
      sessionLifetimeMs: oidc.sessionLifetimeMs,
      publicUrl: config.apiPublicUrl,
    },
  );
}

/** The gateway of this process, and its name among the publishers of load to the store. */
interface LocalGateway {
  gateway: Gateway;
  publisher: string;
}

async function startController(
  shared: Shared,
  local: LocalGateway | null,
  runtime: Runtime,
  activity: ActivityRecorder | null,
  revisionMetrics: LateRevisionMetrics | null,
): Promise<Controller> {
  const { config, store, logger, closers, registry, usage, catalog, out } = shared;
  const settings = settingsOf(config);
  const sealer = sealerOf(shared);
  const { logsDir, cacheDir } = runtimeDirs(config.dataDir);
  const workersDir = path.join(config.dataDir, 'orchestrated');
  // The autoscaler sums what the gateway in this process measures (read directly) and what
  // every other gateway on the store reports (gateway/load-publisher.ts).
  let controller: Controller | null = null;
  const gateway = local?.gateway ?? null;
  const load = new StoreLoad(
    store,
    gateway && local
      ? {
          publisher: local.publisher,
          load: {
            samples: (id) => gateway.inflight.concurrency(id),
            held: (id) => gateway.activator.held(id),
            inflight: (id) => gateway.inflight.inflight(id),
            revisionSamples: (id, revision) => gateway.inflight.revisionConcurrency(id, revision),
            queued: (id) => gateway.queued(id),
            replicaSignals: (id) => gateway.engineSignals(id),
            revisionSteps: (id, revision) => gateway.revisionHistory.steps(id, revision),
            revisions: (id) => [...new Set([...gateway.inflight.revisionIds(id), ...gateway.revisionHistory.revisions(id)])],
            busy: () => gateway.busyDeployments(),
          },
        }
      : null,
    logger.child({ component: 'autoscaler' }),
  );
  if (revisionMetrics) revisionMetrics.load = load;
  const autoscaler = new Autoscaler({
    store,
    load,
    clock: systemClock,
    windows: settings.autoscaler,
    logger: logger.child({ component: 'autoscaler' }),
    registry,
    // Each deployment whose figure moved is reconciled alone: the others are not touched.
    onChange: (ids) => {
      for (const id of ids) controller?.poke(id);
    },
    ...(activity ? { activity } : {}),
    // Through the controller: only the leader's decisions are applied, so only they are told.
    events: (id, note) => controller?.recordEvent(id, note),
  });
  controller = new Controller({
    store,
    runtime,
    clock: systemClock,
    logger: logger.child({ component: 'controller' }),
    ...settings.controller,
    load,
    // With gateways in other processes (a shared store), their in-flight counts arrive once per
    // report interval: a drain waits for two reports before it trusts a zero.
    ...(config.redisUrl !== null ? { drainSettleMs: 2 * settings.gateway.loadReports.intervalMs + 500 } : {}),
    usage,
    gpusPerReplica: (d, component) => gpusPerReplica(catalog, d, component),
    hardwareOf: (d, component) => hardwareOfReplica(catalog, d, component) ?? null,
    workersDir,
    unseal: (sealed) => sealer.unseal(sealed),
    leftovers: new LocalLeftovers({ store, dirs: [logsDir, workersDir, cacheDir], usage }),
    logsDir,
    keepOnStop: keepsReplicasOnStop(runtime, config),
    ...(autoscaler ? { autoscaled: (id: number, revision: number | null) => autoscaler.desiredFor(id, revision) } : {}),
  });
  const running = controller;
  // Which control process acts: exactly one per store reports 1 (a standby 0).
  new Gauge({
    name: 'infergate_controller_leader',
    help: 'Whether this process holds the controller lease and reconciles (1) or stands by (0)',
    registers: [registry],
    collect() {
      this.set(running.isLeader ? 1 : 0);
    },
  });
  gateway?.activator.onDemand(() => autoscaler.poke());
  autoscaler.start();
  await running.start();
  closers.push(async () => {
    await autoscaler.stop();
    const outcome = await running.stop();
    shared.kept.replicas = outcome.kept;
    if (outcome.kept + outcome.drained > 0) out(stoppedLine(outcome));
  });
  return running;
}

async function loadImageMap(file: string | null): Promise<ImageMap> {
  if (file === null) return DEFAULT_IMAGE_MAP;
  try {
    return parseImageMap(JSON.parse(await readFile(file, 'utf8')));
  } catch (err) {
    throw new ConfigError(`--image-map ${file}: ${(err as Error).message}`);
  }
}

async function loadCatalog(file: string | null): Promise<Catalog> {
  if (file === null) return DEFAULT_CATALOG;
  return parseCatalog(JSON.parse(await readFile(file, 'utf8')));
}

async function readApiTls(config: Config): Promise<{ cert: Buffer; key: Buffer } | null> {
  if (!config.apiTlsCert || !config.apiTlsKey) return null;
  return { cert: await readFile(config.apiTlsCert), key: await readFile(config.apiTlsKey) };
}

/** --registries in words for the start-up line. */
function registriesWords(listed: readonly string[]): string {
  const any = 'any registry but loopback, link-local and this service';
  if (listed.length === 0) return any;
  return listed.map((l) => (l === '*' ? any : l)).join(', ');
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

