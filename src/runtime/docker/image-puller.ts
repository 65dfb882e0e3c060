// Owns getting images onto this host for the Docker runtime: one pull per image and
// credentials at a time, shared by every replica waiting for it (a deployment of eight
// replicas pulls once), its progress as a percentage, a failure classified into words a user
// can act on (unknown image, unknown tag, refused credentials, unreachable registry), and a
// backoff per image after a failure, so replicas that keep asking never make a loop of pulls.
//
// An image already on the host is used as is only when it names no registry (a local build,
// or Docker Hub, which is unreachable here anyway). One from a registry is pulled once per
// credentials per run of the service, even when present: the pull is what checks that these
// credentials may read it, and a member must not run a private image another deployment pulled.
//
// Before anything else the registry gate is asked again (the control API asked when the image
// was accepted): a host the daemon may not contact (--registries; loopback, link-local and this
// service's own listeners by default) fails the pull without the daemon ever being told of it,
// whatever wrote the record and whatever its name resolves to now.

import { createHash } from 'node:crypto';
import type Dockerode from 'dockerode';
import type { RegistryGate } from '../../domain/ports.js';
import { registryHostOf, registryOf } from '../../domain/registry-hosts.js';

export type PullFailureKind = 'unknown_image' | 'unknown_tag' | 'refused_credentials' | 'unreachable_registry' | 'refused_registry' | 'other';

export interface PullFailure {
  kind: PullFailureKind;
  /** What to tell the user, without the retry. */
  reason: string;
}

export class PullError extends Error {
  constructor(
    readonly failure: PullFailure,
    /** When the next pull of this image may be tried (epoch ms). */
    readonly retryAt: number,
  ) {
    super(failure.reason);
  }
}

export interface Auth {
  username: string;
  password: string;
}

export interface PullBackoff {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_PULL_BACKOFF: PullBackoff = { initialMs: 5_000, maxMs: 300_000 };

interface PullState {
  /** The pull under way; listeners hear its percentage. */
  running: Promise<void> | null;
  listeners: Set<(percent: number) => void>;
  percent: number;
  verified: boolean;
  failure: PullError | null;
  failures: number;
}

/** Splits `ref` into repository and tag at the last colon after the last slash. */
export function splitRef(ref: string): { repo: string; tag: string } {
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  return colon > slash ? { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) } : { repo: ref, tag: 'latest' };
}

/** Words for what the daemon said when a pull failed. */
export function classifyPullError(ref: string, message: string): PullFailure {
  const { repo, tag } = splitRef(ref);
  const registry = registryOf(repo) ?? 'Docker Hub';
  const m = message.toLowerCase();
  if (/unauthorized|authentication required|no basic auth credentials|incorrect username or password|denied: requested access/.test(m)) {
    return { kind: 'refused_credentials', reason: `the registry ${registry} refused the credentials for ${repo}: check registry_username and registry_password` };
  }
  if (/connection refused|no such host|i\/o timeout|network is unreachable|dial tcp|timeout exceeded|tls handshake|server gave http response|connection reset/.test(m)) {
    return { kind: 'unreachable_registry', reason: `the registry ${registry} is unreachable: ${firstLine(message)}` };
  }
  if (/manifest for .* not found|manifest unknown|not found: manifest/.test(m)) {
    // Registries answer "manifest unknown" for a repository they do not have, too.
    return { kind: 'unknown_tag', reason: `tag ${tag} of ${repo} not found in ${registry} (no such tag, or no such image)` };
  }
  if (/repository does not exist|name unknown|not found|pull access denied/.test(m)) {
    return { kind: 'unknown_image', reason: `image ${repo} not found in ${registry} (or these credentials may not read it)` };
  }
  return { kind: 'other', reason: `pulling ${ref} failed: ${firstLine(message)}` };
}

function firstLine(s: string): string {
  return (s.split('\n')[0] ?? '').slice(0, 300);
}

/** Download progress over every layer the daemon reported, 0–100. */
export class PullProgress {
  private readonly layers = new Map<string, { current: number; total: number }>();

  update(event: { id?: string; status?: string; progressDetail?: { current?: number; total?: number } }): number {
    const id = event.id;
    const status = event.status ?? '';
    if (id !== undefined && /^[0-9a-f]{12}$/.test(id)) {
      const layer = this.layers.get(id) ?? { current: 0, total: 0 };
      const detail = event.progressDetail;
      if (status === 'Downloading' && detail?.total) {
        layer.total = detail.total;
        layer.current = detail.current ?? layer.current;
      } else if (/Download complete|Pull complete|Already exists|Extracting/.test(status)) {
        layer.total = Math.max(layer.total, 1);
        layer.current = layer.total;
      }
      this.layers.set(id, layer);
    }
    return this.percent();
  }

  percent(): number {
    let current = 0;
    let total = 0;
    for (const l of this.layers.values()) {
      current += l.current;
      total += l.total;
    }
    // Layers not yet sized count as not started: the figure only grows as the daemon reports them.
    const sized = [...this.layers.values()].every((l) => l.total > 0);
    if (total === 0) return 0;
    const pct = Math.floor((100 * current) / total);
    return sized ? Math.min(pct, 100) : Math.min(pct, 99);
  }
}

export class ImagePuller {
  private readonly states = new Map<string, PullState>();

  constructor(
    private readonly docker: Dockerode,
    private readonly backoff: PullBackoff = DEFAULT_PULL_BACKOFF,
    private readonly now: () => number = Date.now,
    /** Which registry hosts the daemon may be sent to; null: any (tests of the puller alone). */
    private readonly gate: RegistryGate | null = null,
  ) {}

  /**
   * Resolves once `ref` is on this host and these credentials may read it; `onProgress` hears
   * the percentage while a pull runs. Rejects with a PullError (classified, with its retry
   * time) — at once, without pulling, while an earlier failure's backoff lasts, and without
   * the daemon hearing of it when the registry gate refuses the image's host.
   */
  async ensure(ref: string, auth: Auth | null, onProgress: (percent: number) => void): Promise<void> {
    const state = this.stateOf(ref, auth);
    if (state.verified) return;
    const host = registryHostOf(splitRef(ref).repo);
    const refusal = this.gate === null ? undefined : await this.gate.refusal(host);
    if (refusal !== undefined) {
      // Not retried sooner than the longest backoff: only a restart with another --registries changes the answer.
      throw new PullError({ kind: 'refused_registry', reason: `the image ${splitRef(ref).repo} is not pulled: ${refusal}` }, this.now() + this.backoff.maxMs);
    }
    if (registryOf(splitRef(ref).repo) === null && (await this.present(ref))) {
      state.verified = true;
      return;
    }
    if (state.failure !== null && this.now() < state.failure.retryAt) throw state.failure;
    state.listeners.add(onProgress);
    try {
      state.running ??= this.pull(ref, auth, state).finally(() => {
        state.running = null;
      });
      await state.running;
    } finally {
      state.listeners.delete(onProgress);
    }
  }

  private stateOf(ref: string, auth: Auth | null): PullState {
    const key = `${ref}\n${auth === null ? '' : createHash('sha256').update(`${auth.username}\n${auth.password}`).digest('hex')}`;
    let state = this.states.get(key);
    if (state === undefined) {
      state = { running: null, listeners: new Set(), percent: 0, verified: false, failure: null, failures: 0 };
      this.states.set(key, state);
    }
    return state;
  }

  private async present(ref: string): Promise<boolean> {
    try {
      await this.docker.getImage(ref).inspect();
      return true;
    } catch {
      return false;
    }
  }

  private async pull(ref: string, auth: Auth | null, state: PullState): Promise<void> {
    const progress = new PullProgress();
    state.percent = 0;
    try {
      const registry = registryOf(splitRef(ref).repo);
      // Credentials go as the X-Registry-Auth header (dockerode's auth argument); given as an
      // option they would also land in the request's query string.
      const credentials = auth === null ? undefined : { username: auth.username, password: auth.password, serveraddress: registry ?? 'https://index.docker.io/v1/' };
      const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) => {
        this.docker.pull(ref, {}, (err: unknown, out?: NodeJS.ReadableStream) => (err || !out ? reject(err instanceof Error ? err : new Error('no answer')) : resolve(out)), credentials);
      });
      await new Promise<void>((resolve, reject) => {
        // The daemon reports a failed pull as an event in a stream that ends normally.
        let failure: string | undefined;
        this.docker.modem.followProgress(
          stream,
          (err: Error | null) => (err ? reject(err) : failure !== undefined ? reject(new Error(failure)) : resolve()),
          (event: { id?: string; status?: string; error?: string; errorDetail?: { message?: string }; progressDetail?: { current?: number; total?: number } }) => {
            if (event.error !== undefined || event.errorDetail?.message !== undefined) {
              failure ??= event.errorDetail?.message ?? event.error;
              return;
            }
            const pct = progress.update(event);
            if (pct !== state.percent) {
              state.percent = pct;
              for (const l of state.listeners) l(pct);
            }
          },
        );
      });
      state.verified = true;
      state.failure = null;
      state.failures = 0;
    } catch (err) {
      state.failures++;
      const delay = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** (state.failures - 1));
      const message = err instanceof Error ? err.message : String(err);
      state.failure = new PullError(classifyPullError(ref, daemonMessage(message)), this.now() + delay);
      throw state.failure;
    }
  }
}

/** dockerode prefixes the daemon's JSON answer ("(HTTP code 404) unexpected - {"message":…}"); the message is what matters. */
function daemonMessage(message: string): string {
  const json = message.indexOf('{');
  if (json >= 0) {
    try {
      const parsed = JSON.parse(message.slice(json)) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      // not JSON after all
    }
  }
  return message;
}
