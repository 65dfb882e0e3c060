// Owns the one interface every replica-selection policy implements (Caddy's selection
// policies and Pingora's candidate iterator are the models): a policy returns the replicas in
// the order to try them, so the forwarder's retry loop never knows which policy chose.

export interface ReplicaRef {
  readonly id: number;
  readonly address: string;
}

/** In-flight requests per replica, as counted by the gateway right now. */
export interface LoadView {
  inflight(replicaId: number): number;
}

export interface Selector {
  /**
   * Ordered candidates: the first is the choice, the rest the fallback order for retries.
   * Contains every replica exactly once; empty only when `replicas` is empty.
   */
  select(replicas: readonly ReplicaRef[], load: LoadView, key: string | null): ReplicaRef[];
}
