// Owns what the routing table knows of the store's records, in the shape its routes need and
// indexed both ways: per deployment, what its record says of its routes (not the record
// itself); every token's hash and cap, and the deployments that bind each; the service-account
// key hashes (a bound token with one of them is left out); the unrevoked client certificates,
// by the deployment they were issued for and the deployments that bind them; the ready
// replicas with an address, by deployment. Applying one record (as read after a change-feed
// event) says which deployments' routes it touches, so the table rebuilds only those — the
// cost of a change does not grow with the number of deployments.

import { acceptsCertificate } from '../domain/client-certificates.js';
import { routedComponent } from '../domain/components.js';
import { projectOf } from '../domain/access.js';
import { addressName, endpointHost } from '../domain/endpoint-address.js';
import { resolveTraffic, splitOf, type RevisionShare } from '../domain/traffic.js';
import { normalizeFingerprint } from '../pki/client-certs.js';
import type { Priority } from '../domain/priority.js';
import {
  DEFAULT_FLOW_CONTROL,
  limitsOf,
  routingPolicyOf,
  type CertificateRecord,
  type DeploymentRecord,
  type DeploymentStatus,
  type EndpointAuth,
  type FlowControl,
  type Protocol,
  type RateLimit,
  type ReplicaRecord,
  type RoutingPolicy,
  type ServiceAccountRecord,
  type TokenRecord,
} from '../domain/records.js';
import type { ReplicaRef } from '../balancer/selector.js';

/** What a deployment record says of its routes. */
export interface Basis {
  id: number;
  /** The deployment's own name, unique within its project only. */
  name: string;
  project: string;
  /** The name as its addresses spell it (`chat`, `chat.team-a`): unique in the table. */
  address: string;
  /** Its canonical host, `<address>.<domain>`. */
  host: string;
  protocol: Protocol;
  auth: EndpointAuth;
  affinity: boolean;
  routingPolicy: RoutingPolicy;
  paused: boolean;
  scaleToZero: boolean;
  status: DeploymentStatus;
  component: string;
  /** resolveTraffic: the revisions traffic names, with their shares and tags. */
  shares: RevisionShare[];
  /** splitOf: null when traffic names one revision. */
  split: RevisionShare[] | null;
  maxBodyBytes: number | null;
  firstResponseMs: number | null;
  rateLimit: RateLimit | null;
  flowControl: FlowControl;
}

/** A ready replica with an address: what a route forwards to. */
interface ReadyReplica {
  deploymentId: number;
  component: string;
  ref: ReplicaRef;
}

interface LiveCertificate {
  id: number;
  deployment_id: number | null;
  fingerprint: string;
  maxPriority: Priority | null;
}

export type RoutedKind = 'deployment' | 'token' | 'service_account' | 'certificate' | 'replica';
export type RoutedRecord = DeploymentRecord | TokenRecord | ServiceAccountRecord | CertificateRecord | ReplicaRecord;

const NO_CERTIFICATES: ReadonlyMap<string, Priority | null> = new Map();

/** A limit in seconds as ms; absent (a record older than the field) or null: none. */
function secondsAsMs(seconds: number | null | undefined): number | null {
  return seconds === undefined || seconds === null ? null : seconds * 1000;
}

function addTo<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  const set = index.get(key);
  if (set) set.add(value);
  else index.set(key, new Set([value]));
}

function removeFrom<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}

export function basisOf(d: DeploymentRecord, domain: string): Basis {
  const limits = limitsOf(d);
  const project = projectOf(d);
  return {
    id: d.id,
    name: d.name,
    project,
    address: addressName(d.name, project),
    host: endpointHost(d.name, domain, project),
    protocol: d.spec.protocol,
    auth: d.auth,
    affinity: d.spec.family === 'general' && d.spec.session_affinity,
    routingPolicy: d.spec.family === 'general' ? routingPolicyOf(d.spec) : 'affinity',
    paused: d.paused,
    scaleToZero: d.family === 'general' && d.scaling.min_replicas === 0,
    status: d.status,
    component: routedComponent(d),
    shares: resolveTraffic(d),
    split: splitOf(d),
    maxBodyBytes: limits.max_request_body_bytes,
    firstResponseMs: secondsAsMs(limits.first_response_timeout_seconds),
    rateLimit: limits.rate_limit,
    flowControl: limits.flow_control ?? DEFAULT_FLOW_CONTROL,
  };
}

function readyOf(r: ReplicaRecord): ReadyReplica | undefined {
  // A record without an address cannot be forwarded to, whatever its state says.
  if (r.state !== 'ready' || r.address === '') return undefined;
  const metrics = r.metrics_target ? `http://${r.metrics_target.address}${r.metrics_target.path}` : undefined;
  return { deploymentId: r.deployment_id, component: r.component, ref: { id: r.id, address: r.address, revision: r.revision, metrics } };
}

function sameReady(a: ReadyReplica, b: ReadyReplica): boolean {
  return a.deploymentId === b.deploymentId && a.component === b.component && a.ref.address === b.ref.address && a.ref.revision === b.ref.revision && a.ref.metrics === b.ref.metrics;
}

export class RouteSources {
  readonly bases = new Map<number, Basis>();
  private readonly tokens = new Map<number, { hash: string; maxPriority: Priority | null }>();
  private readonly tokensByHash = new Map<string, Set<number>>();
  /** Token id → the deployments that bind it. */
  private readonly tokenUsers = new Map<number, Set<number>>();
  /** Service account id → its key hash. */
  private readonly accounts = new Map<number, string>();
  /** Key hash → how many service accounts hold it. */
  private readonly platformKeys = new Map<string, number>();
  private readonly certificates = new Map<number, LiveCertificate>();
  /** Deployment id → the live certificates issued for it. */
  private readonly issuedFor = new Map<number, Set<number>>();
  /** Certificate id → the deployments that bind it. */
  private readonly boundBy = new Map<number, Set<number>>();
  private readonly ready = new Map<number, ReadyReplica>();
  private readonly readyBy = new Map<number, Map<number, ReadyReplica>>();

  constructor(private readonly domain: string) {}

  clear(): void {
    for (const m of [this.bases, this.tokens, this.tokensByHash, this.tokenUsers, this.accounts, this.platformKeys, this.certificates, this.issuedFor, this.boundBy, this.ready, this.readyBy]) m.clear();
  }

  /** Takes in one record as it is now (undefined: deleted); adds the deployments whose routes it touches to `affected`. */
  apply(kind: RoutedKind, id: number, record: RoutedRecord | undefined, affected: Set<number>): void {
    switch (kind) {
      case 'deployment':
        return this.deployment(id, record as DeploymentRecord | undefined, affected);
      case 'token':
        return this.token(id, record as TokenRecord | undefined, affected);
      case 'service_account':
        return this.account(id, record as ServiceAccountRecord | undefined, affected);
      case 'certificate':
        return this.certificate(id, record as CertificateRecord | undefined, affected);
      case 'replica':
        return this.replica(id, record as ReplicaRecord | undefined, affected);
    }
  }

  /** The deployment's bound token, unless it is missing or its hash is a service-account key. */
  tokenOf(b: Basis): { hash: string; maxPriority: Priority | null } | undefined {
    if (b.auth.token_id === null) return undefined;
    const token = this.tokens.get(b.auth.token_id);
    return token === undefined || this.platformKeys.has(token.hash) ? undefined : token;
  }

  /** Fingerprint → cap of the live certificates the deployment accepts: its bound one first, then those issued for it by id. */
  certificatesOf(b: Basis): ReadonlyMap<string, Priority | null> {
    if (b.auth.client_certificate_id === null) return NO_CERTIFICATES;
    const bound = this.certificates.get(b.auth.client_certificate_id);
    const issued = [...(this.issuedFor.get(b.id) ?? [])].sort((x, y) => x - y).map((id) => this.certificates.get(id)!);
    const accepted = new Map<string, Priority | null>();
    for (const c of [...(bound ? [bound] : []), ...issued]) if (acceptsCertificate(b, c)) accepted.set(c.fingerprint, c.maxPriority);
    return accepted.size === 0 ? NO_CERTIFICATES : accepted;
  }

  /** The ready replicas of the deployment's routed component, by id. */
  readyOf(b: Basis): ReplicaRef[] {
    const mine = this.readyBy.get(b.id);
    if (mine === undefined) return [];
    return [...mine.entries()]
      .filter(([, r]) => r.component === b.component)
      .sort(([a], [c]) => a - c)
      .map(([, r]) => r.ref);
  }

  private deployment(id: number, d: DeploymentRecord | undefined, affected: Set<number>): void {
    const old = this.bases.get(id);
    if (old) {
      if (old.auth.token_id !== null) removeFrom(this.tokenUsers, old.auth.token_id, id);
      if (old.auth.client_certificate_id !== null) removeFrom(this.boundBy, old.auth.client_certificate_id, id);
    }
    if (d) {
      const b = basisOf(d, this.domain);
      this.bases.set(id, b);
      if (b.auth.token_id !== null) addTo(this.tokenUsers, b.auth.token_id, id);
      if (b.auth.client_certificate_id !== null) addTo(this.boundBy, b.auth.client_certificate_id, id);
    } else {
      this.bases.delete(id);
    }
    affected.add(id);
  }

  private token(id: number, t: TokenRecord | undefined, affected: Set<number>): void {
    const old = this.tokens.get(id);
    if (old) removeFrom(this.tokensByHash, old.hash, id);
    if (t) {
      this.tokens.set(id, { hash: t.hash, maxPriority: t.max_priority ?? null });
      addTo(this.tokensByHash, t.hash, id);
    } else {
      this.tokens.delete(id);
    }
    for (const d of this.tokenUsers.get(id) ?? []) affected.add(d);
  }

  private account(id: number, a: ServiceAccountRecord | undefined, affected: Set<number>): void {
    const old = this.accounts.get(id);
    const next = a?.key_hash;
    if (old === next) return;
    if (old !== undefined) {
      const n = (this.platformKeys.get(old) ?? 1) - 1;
      if (n > 0) this.platformKeys.set(old, n);
      else this.platformKeys.delete(old);
      this.accounts.delete(id);
    }
    if (next !== undefined) {
      this.platformKeys.set(next, (this.platformKeys.get(next) ?? 0) + 1);
      this.accounts.set(id, next);
    }
    for (const hash of [old, next]) {
      if (hash === undefined) continue;
      for (const token of this.tokensByHash.get(hash) ?? []) for (const d of this.tokenUsers.get(token) ?? []) affected.add(d);
    }
  }

  private certificate(id: number, c: CertificateRecord | undefined, affected: Set<number>): void {
    const old = this.certificates.get(id);
    if (old) {
      this.certificates.delete(id);
      if (old.deployment_id !== null) {
        removeFrom(this.issuedFor, old.deployment_id, id);
        affected.add(old.deployment_id);
      }
    }
    if (c && c.revoked_at === null) {
      this.certificates.set(id, { id, deployment_id: c.deployment_id, fingerprint: normalizeFingerprint(c.fingerprint_sha256), maxPriority: c.max_priority ?? null });
      if (c.deployment_id !== null) {
        addTo(this.issuedFor, c.deployment_id, id);
        affected.add(c.deployment_id);
      }
    }
    for (const d of this.boundBy.get(id) ?? []) affected.add(d);
  }

  private replica(id: number, r: ReplicaRecord | undefined, affected: Set<number>): void {
    const old = this.ready.get(id);
    const next = r === undefined ? undefined : readyOf(r);
    if (old === undefined && next === undefined) return;
    if (old !== undefined && next !== undefined && sameReady(old, next)) return;
    if (old !== undefined) {
      this.ready.delete(id);
      const mine = this.readyBy.get(old.deploymentId);
      mine?.delete(id);
      if (mine?.size === 0) this.readyBy.delete(old.deploymentId);
      affected.add(old.deploymentId);
    }
    if (next !== undefined) {
      this.ready.set(id, next);
      let mine = this.readyBy.get(next.deploymentId);
      if (!mine) this.readyBy.set(next.deploymentId, (mine = new Map()));
      mine.set(id, next);
      affected.add(next.deploymentId);
    }
  }
}
