// Owns the shapes through which the control API reaches what only the runtime can do — read a
// replica's log files, run a shell in a replica — so that the control API never imports the
// runtime nor starts a process itself: the runtime implements these, cli/ wires them in —
// and the autoscaler's activity history, which lives where the autoscaler runs. Types only.

import type { AutoscalingMetric } from './autoscaling-signal.js';
import type { DeploymentRecord } from './records.js';

export interface LogFilter {
  revision?: number;
  component?: string;
  replica?: string;
}

export interface LogEntry {
  time: string;
  stream: string;
  line: string;
  revision: number;
  component: string;
  replica: string;
}

/** A deployment's replica logs. */
export interface LogSource {
  /** The last `n` lines matching `filter`, oldest first. */
  tail(deploymentId: number, filter: LogFilter, n: number): Promise<LogEntry[]>;
  /** Every line written from now on, until `signal` aborts. */
  follow(deploymentId: number, filter: LogFilter, onLine: (entry: LogEntry) => void, signal: AbortSignal): Promise<void>;
}

/** What to run for a terminal: the runtime's argv (its sandbox included), directory and environment. */
export interface ShellCommand {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
}

/** A shell on pipes: bytes in, stdout and stderr out. */
export interface PipeShell {
  write(data: Buffer): void;
  onOutput(listener: (chunk: Buffer) => void): void;
  onError(listener: (err: Error) => void): void;
  /** Once the shell has exited (and, on pipes, its output is all read), with its exit status (null: killed by a signal). */
  onExit(listener: (status: number | null) => void): void;
  /** Kills its process group; safe to call more than once. */
  kill(): void;
}

/** A shell on a pseudo-terminal. */
export interface PtyShell {
  write(data: string): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  onData(listener: (data: string) => void): void;
  /** Once the shell has exited (and, on pipes, its output is all read), with its exit status (null: killed by a signal). */
  onExit(listener: (status: number | null) => void): void;
  /** Kills every process of the pty's session; safe to call more than once. */
  kill(): void;
}

/** Starts terminal shells; `pty` throws when no pseudo-terminal can be made. */
export interface ShellLauncher {
  pipe(command: ShellCommand): PipeShell;
  pty(command: ShellCommand, size: { cols: number; rows: number }): PtyShell;
}

/** A shell to open in a ready replica: the runtime's command for it, what starts it, and its end. */
export interface ShellTarget extends ShellCommand {
  replica: string;
  /** Starts the shell: a process on this host (local runtime) or a Docker exec in the container. */
  launcher: ShellLauncher;
  /** Called when the replica stops, so the terminal closes with it. */
  onGone(listener: () => void): void;
}

/** Where shells run: the controller's ready replicas. */
export interface ShellProvider {
  /** Why no shell may open on this node, or null. */
  shellRefusal(): string | null;
  /** The shell for a ready replica of the deployment (`replica` picks one), or null when none is ready. */
  shellTarget(deploymentId: number, replica?: string): ShellTarget | null;
}

/** One 5-second step of a deployment's load and replicas, as the autoscaler saw it. */
export interface ActivityPoint {
  /** Start of the step (ISO 8601). */
  t: string;
  /** Mean of the per-second concurrency samples in the step, 2 decimals; 0 when none. */
  in_flight: number;
  in_flight_max: number;
  /** Most requests the activator held at once in the step. */
  held: number;
  /** The autoscaler's figure at the step's end; null while it has not decided (paused, new). */
  desired: number | null;
  /** Ready replicas of the scaled component at the step's end. */
  ready: number;
  /**
   * The figure of the autoscaling metric the autoscaler last read in the step (per replica for
   * queue_depth, percent for kv_cache, p90 ms for ttft, in-flight per replica for concurrency);
   * null when it read none.
   */
  signal: number | null;
}

export interface ActivityView {
  step_seconds: number;
  window_seconds: number;
  /** The component the autoscaler moves; null when the pools have fixed sizes (no points then). */
  component: string | null;
  /** The signal the deployment scales on, and its target (null: a fixed size). */
  metric: AutoscalingMetric;
  target: number | null;
  /** Oldest first; the last is the step being filled now. */
  points: ActivityPoint[];
}

/** The autoscaler's recent history of a deployment. */
export interface ActivitySource {
  view(d: DeploymentRecord): ActivityView;
}

/** One revision of a deployment compared with the others over the last minutes (the console's side-by-side view). */
export interface RevisionMetrics {
  revision: number;
  requests: number;
  errors: number;
  ttft_p50_ms: number | null;
  ttft_p99_ms: number | null;
  tokens_per_second: number;
}

/**
 * What the gateways measured of each revision of a deployment over a window (summed over
 * every gateway reporting to this process); lives where the autoscaler runs.
 */
export interface RevisionMetricsSource {
  /** Every revision that served in the window, by number; `windowSeconds` at most 300. */
  revisions(deploymentId: number, windowSeconds: number): RevisionMetrics[];
}

/**
 * Whether the container daemon may be sent to pull from a registry host: the rule is
 * registry-hosts.ts's (registryRefusal); the facts it needs (what a name resolves to, this
 * host's addresses, the service's listener ports) are the implementation's to find.
 */
export interface RegistryGate {
  /** Why the daemon must not pull from `host` (host[:port] as an image names it), or undefined when it may. */
  refusal(host: string): Promise<string | undefined>;
}
