// Owns what the local runtime runs for a replica request: the argv (the reference engine in
// the image's flavor, or the user's command on the host), the environment (the deployment's
// variables plus PORT, HOST and the replica's paths — never the service's own secrets), the
// working directory (the replica's root) and the readiness probe. Pure: no I/O.
//
// Where the replica listens is the runtime's (`--host`, last on the engine's and the Frontend's
// command line so a deployment's own `--host` cannot change it; `HOST` and `$HOST` for a host
// command): in a pod (pods.ts), every address of the pod's own namespace — its loopback and its
// link, which only this host reaches; without pods, the host's loopback, where only processes
// of this host — the gateway among them — reach it. The runtime cannot force a host command's
// bind address (local-replica.ts reports one that listens beyond loopback on the host's network).

import { envNameRefusal } from '../domain/env-names.js';
import { resolveImage, type EngineFlavor, type ImageMap } from '../domain/image-map.js';
import { modelFromVendorImage, translateEngineCommand } from './engine-args.js';
import { readinessProbe, type Probe } from './readiness.js';
import type { ReplicaRequest } from './runtime.js';

export interface LaunchPlan {
  argv: string[];
  env: Record<string, string>;
  probe: Probe;
  /** The user's command on this host (an image the runtime does not simulate), not infergate's own program. */
  hostCommand: boolean;
  /** Lines for the replica's log explaining what the runtime chose and why. */
  notes: string[];
}

export interface PlanInputs {
  port: number;
  /** What the replica listens on: POD_LISTEN_HOST in a pod, REPLICA_HOST on the host's network. */
  host: string;
  /** A separate metrics port, when the deployment's differs from its container port. */
  metricsPort: number | null;
  root: string;
  configPath: string | null;
  cacheDir: string | null;
  /** How to run `infergate` itself: argv before the subcommand. */
  selfCommand: string[];
  images: ImageMap;
  /** Variables replicas inherit from the service's environment (PATH and the like). */
  inherited: Record<string, string>;
}

/** Only these pass from the service's environment to replicas: nothing secret does. */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'USER', 'LOGNAME', 'SHELL'];

export function pickInherited(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of INHERITED_ENV) {
    const value = env[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The address replicas listen on where they share the host's network (no pods). */
export const REPLICA_HOST = '127.0.0.1';

/** `$PORT`/`${PORT}` and `$HOST`/`${HOST}` in a host command's arguments become the replica's port and listen address. */
function substituteRuntimeVars(arg: string, port: number, host: string): string {
  return arg.replace(/\$\{PORT\}|\$PORT\b/g, String(port)).replace(/\$\{HOST\}|\$HOST\b/g, host);
}

/**
 * The deployment's variables the replica may have: the control API refuses the others
 * (env-names.ts), and a record written before that rule has them dropped here, named in `notes`.
 */
export function deploymentEnv(env: Readonly<Record<string, string>>, simulated: boolean, notes: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (envNameRefusal(name, simulated) === null) out[name] = value;
    else dropped.push(name);
  }
  if (dropped.length > 0) notes.push(`infergate runtime: environment variables not passed to this replica (${dropped.join(', ')}): ${envNameRefusal(dropped[0]!, simulated)}`);
  return out;
}

export function planLaunch(req: ReplicaRequest, inputs: PlanInputs): LaunchPlan {
  const notes: string[] = [];
  const launch = resolveImage(inputs.images, req.image, req.tag);
  const env: Record<string, string> = {
    ...inputs.inherited,
    ...deploymentEnv(req.env, launch.kind !== 'host', notes),
    PORT: String(inputs.port),
    HOST: inputs.host,
    INFERGATE_REPLICA_ID: req.name,
    INFERGATE_REPLICA_ROOT: inputs.root,
  };
  if (inputs.metricsPort !== null) env.METRICS_PORT = String(inputs.metricsPort);
  if (inputs.configPath !== null) env.INFERGATE_CONFIG_FILE = inputs.configPath;
  if (inputs.cacheDir !== null) env.INFERGATE_MODEL_CACHE_DIR = inputs.cacheDir;
  const probe = readinessProbe(req);
  if (launch.kind === 'host') {
    const where = inputs.host === REPLICA_HOST ? "listen on that address: replicas share the host's network" : "the replica's own network namespace, which only this host reaches";
    notes.push(`infergate runtime: image ${req.image}:${req.tag} is not one the runtime simulates; running the command on this host with PORT=${inputs.port} HOST=${inputs.host} (${where})`);
    return { argv: req.command.map((a) => substituteRuntimeVars(a, inputs.port, inputs.host)), env, probe, hostCommand: true, notes };
  }
  if (launch.kind === 'frontend') {
    notes.push('infergate runtime: running the orchestrated Frontend (infergate frontend)');
    return { argv: [...inputs.selfCommand, 'frontend', ...req.command, '--host', inputs.host], env, probe, hostCommand: false, notes };
  }
  const engine = simulatedEngineArgs(req, launch, inputs.metricsPort, notes);
  return { argv: [...inputs.selfCommand, ...engine, '--host', inputs.host], env, probe, hostCommand: false, notes };
}

/**
 * The reference engine's command line (from `engine` on) for a known engine image: its own
 * flags for the reference engine image, else the image's engine command translated, with the
 * model a vendor image names. Both runtimes run it: a process here, or the engine image.
 */
export function simulatedEngineArgs(req: ReplicaRequest, launch: { flavor: EngineFlavor; native: boolean }, metricsPort: number | null, notes: string[]): string[] {
  const engine = ['engine', '--flavor', launch.flavor];
  if (metricsPort !== null) engine.push('--metrics-port', String(metricsPort));
  if (launch.native) {
    notes.push(`infergate runtime: running the reference engine (simulated GPU), flavor ${launch.flavor}`);
    return [...engine, ...req.command];
  }
  const translated = translateEngineCommand(req.command);
  const model = translated.model ?? (launch.flavor === 'nim' ? modelFromVendorImage(req.image) : null);
  notes.push(`infergate runtime: simulating ${req.image}:${req.tag} with the reference engine (simulated GPU), flavor ${launch.flavor}`);
  if (translated.ignored.length > 0) notes.push(`infergate runtime: arguments the simulator does not model: ${translated.ignored.join(' ')}`);
  return [...engine, ...(model !== null ? ['--model', model] : []), ...translated.args];
}
