// Owns the gateway's routing table: hostname → what the request path needs to know about
// a deployment (credential hashes, paused, status, ready replicas). It is rebuilt in memory
// from the store whenever the change feed reports a relevant change, so the request path
// never touches the store.

import type { DeploymentStatus, Kind } from '../domain/records.js';
import type { Store } from '../store/store.js';

export interface Route {
  deploymentId: number;
  name: string;
  host: string;
  /** SHA-256 of the bound endpoint token, or null when the deployment uses only mTLS. */
  tokenHash: string | null;
  paused: boolean;
  status: DeploymentStatus;
  readyReplicas: { id: number; address: string }[];
}

const RELEVANT: ReadonlySet<Kind> = new Set<Kind>(['deployment', 'token', 'replica']);

export class RoutingTable {
  private routes = new Map<string, Route>();
  private unwatch: (() => void) | null = null;
  private rebuilding: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly store: Store,
    private readonly domain: string,
    private readonly onError: (err: Error) => void = () => {},
  ) {}

  async start(): Promise<void> {
    this.unwatch = this.store.watch((event) => {
      if (RELEVANT.has(event.kind)) this.scheduleRebuild();
    });
    await this.rebuild();
  }

  stop(): void {
    this.unwatch?.();
    this.unwatch = null;
  }

  /** Host header value (any case, with or without port) → route. */
  lookup(hostHeader: string | undefined): Route | undefined {
    if (!hostHeader) return undefined;
    const host = hostHeader.replace(/:\d+$/, '').toLowerCase();
    return this.routes.get(host);
  }

  get size(): number {
    return this.routes.size;
  }

  /** Coalesces bursts of changes into one rebuild running at a time, plus one after it. */
  private scheduleRebuild(): void {
    if (this.rebuilding) {
      this.again = true;
      return;
    }
    this.rebuilding = this.rebuild()
      .catch((err: Error) => this.onError(err))
      .finally(() => {
        this.rebuilding = null;
        if (this.again) {
          this.again = false;
          this.scheduleRebuild();
        }
      });
  }

  private async rebuild(): Promise<void> {
    const [deployments, tokens, replicas] = await Promise.all([
      this.store.list('deployment'),
      this.store.list('token'),
      this.store.list('replica'),
    ]);
    const tokenHash = new Map(tokens.map((t) => [t.value.id, t.value.hash]));
    const next = new Map<string, Route>();
    for (const { value: d } of deployments) {
      const host = `${d.name}.${this.domain}`;
      next.set(host, {
        deploymentId: d.id,
        name: d.name,
        host,
        tokenHash: d.auth.token_id === null ? null : (tokenHash.get(d.auth.token_id) ?? null),
        paused: d.paused,
        status: d.status,
        readyReplicas: replicas
          .map((r) => r.value)
          .filter((r) => r.deployment_id === d.id && r.state === 'ready')
          .map((r) => ({ id: r.id, address: r.address })),
      });
    }
    this.routes = next;
  }
}
