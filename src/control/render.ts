// Owns the public shape of stored records: what the API returns for deployments,
// revisions, tokens, service accounts and client certificates, typed by the answers' schemas
// (domain/api-views.ts), so a view that drifts from its schema does not compile. Nothing secret
// passes through here — sealed secrets become `has_*` flags and secret environment variables a
// list of names, hashes are dropped.

import { acceptsCertificate, keyTypeOfRecord } from '../domain/client-certificates.js';
import { containerCapabilitiesOf } from '../domain/container-capabilities.js';
import { autoscalingMetricOf } from '../domain/autoscaling-signal.js';
import { initialReplicasOf } from '../domain/initial-scale.js';
import { componentsOf, routedComponent, specifiedReplicas } from '../domain/components.js';
import { resolveTraffic, rolloutModeOf, splitOf, tagHost, trafficOf, type RevisionShare } from '../domain/traffic.js';
import type {
  CertificateView,
  ComponentCounts,
  DeploymentView,
  ReplicaView,
  RevisionReplicasView,
  RevisionSummaryView,
  RevisionView,
  ServiceAccountView,
  TokenView,
  TrafficTargetView,
} from '../domain/api-views.js';
import { isAlwaysSecret } from '../domain/secret-env.js';
import { servedModel } from '../domain/served-model.js';
import { serviceAccountMembership } from '../domain/membership.js';
import { ENDPOINTS_PATH_PREFIX, addressName, endpointHost, pathAddressHost, withPort } from '../domain/endpoint-address.js';
import { DEFAULT_PROJECT, projectOf } from '../domain/access.js';
import {
  DEFAULT_FLOW_CONTROL,
  limitsOf,
  type CertificateRecord,
  type DeploymentRecord,
  type DeploymentSpec,
  type ReplicaRecord,
  type RevisionRecord,
  type ServiceAccountRecord,
  type TokenRecord,
} from '../domain/records.js';

export interface EndpointAddress {
  domain: string;
  /** The gateway's public port: 443 is implicit in URLs. */
  port: number;
}

/** `<name>.<domain>[:port]` (another project's: `<name>.<project>.<domain>[:port]`), no scheme. */
export function endpointUrl(name: string, at: EndpointAddress, project: string = DEFAULT_PROJECT): string {
  return withPort(endpointHost(name, at.domain, project), at.port);
}

/**
 * The base URL of the path address (no trailing slash): on localhost for a `.localhost`
 * domain, else on the bare domain; `/endpoints/<name>`, or `/endpoints/<name>.<project>`
 * outside the default project. gRPC deployments have none: they are routed by host only.
 */
export function endpointPathUrl(name: string, at: EndpointAddress, protocol: 'http' | 'grpc' = 'http', project: string = DEFAULT_PROJECT): string | null {
  if (protocol === 'grpc') return null;
  return `https://${withPort(pathAddressHost(at.domain), at.port)}${ENDPOINTS_PATH_PREFIX}/${addressName(name, project)}`;
}

/**
 * Spec fields as clients send them, without secrets: `secret_env` lists the secret variables
 * by name, sorted. An always-secret name a record from before secret variables kept in plain
 * env (until the start-up sweep seals it) is listed there too, its value never shown.
 */
export interface PublicSpec {
  env: Record<string, string>;
  secret_env: string[];
  [field: string]: unknown;
}

export function publicSpec(spec: DeploymentSpec): PublicSpec {
  const { secrets, family: _family, env: storedEnv, ...rest } = spec;
  const env = Object.fromEntries(Object.entries(storedEnv).filter(([name]) => !isAlwaysSecret(name)));
  const secretNames = new Set([...Object.keys(secrets.env ?? {}), ...Object.keys(storedEnv).filter(isAlwaysSecret)]);
  const out: PublicSpec = { ...rest, env, secret_env: [...secretNames].sort() };
  if (spec.family === 'general') {
    out.has_registry_password = secrets.registry_password !== undefined;
    out.container_capabilities = containerCapabilitiesOf(spec);
  } else out.has_model_hub_token = secrets.model_hub_token !== undefined;
  if (spec.family === 'orchestrated' && spec.worker_pools === null) delete out.worker_pools;
  if (spec.family === 'orchestrated' && spec.serving_mode === 'disaggregated') delete out.hardware_instance_id;
  return out;
}

/** Scaling fields under the family's wire names; disaggregated pools merge into worker_pools. */
function scalingFields(d: DeploymentRecord): Record<string, unknown> {
  const s = d.scaling;
  if (d.spec.family === 'orchestrated' && d.spec.serving_mode === 'disaggregated' && d.spec.worker_pools && s.pools) {
    return {
      worker_pools: {
        prefill: { hardware_instance_id: d.spec.worker_pools.prefill.hardware_instance_id, replicas: s.pools.prefill },
        decode: { hardware_instance_id: d.spec.worker_pools.decode.hardware_instance_id, replicas: s.pools.decode },
      },
    };
  }
  const target = d.family === 'general' ? 'max_concurrency' : 'concurrency';
  return {
    min_replicas: s.min_replicas,
    max_replicas: s.max_replicas,
    ...(d.family === 'general' ? { initial_replicas: initialReplicasOf(s) } : {}),
    [target]: s.target_concurrency,
    cooldown_period: s.cooldown_period,
  };
}

/**
 * Components with ready (observed replicas) and desired counts. Orchestrated deployments
 * report Frontend plus Worker or Prefill/Decode (spec: "Components reported per deployment").
 */
export function components(d: DeploymentRecord, replicas: ReplicaRecord[]): ComponentCounts {
  const ready = (component: string): number =>
    replicas.filter((r) => r.deployment_id === d.id && r.component === component && r.state === 'ready').length;
  // The controller's own figure once it has reconciled; until then the spec's minimum.
  const desired = (component: string, n: number): number => (d.paused ? 0 : (d.desired_replicas?.[component] ?? n));
  const entry = (component: string, n: number) => ({ ready: ready(component), desired: desired(component, n) });
  return Object.fromEntries(componentsOf(d).map((c) => [c, entry(c, specifiedReplicas(d, c))]));
}

/** What an operator needs to tell replicas apart; addresses and pids stay inside. */
export function renderReplica(r: ReplicaRecord): ReplicaView {
  return { id: r.id, name: r.name, revision: r.revision, component: r.component, state: r.state, restarts: r.restarts, detail: r.detail ?? null, updated_at: r.updated_at };
}

/** `shares`: what traffic resolves to (domain/traffic.ts resolveTraffic); a revision not in it has 0 % and no tag. */
export function revisionSummary(r: RevisionRecord, shares: readonly RevisionShare[]): RevisionSummaryView {
  const share = shares.find((s) => s.revision === r.revision);
  return {
    revision: r.revision,
    created_at: r.created_at,
    reason: r.reason,
    source_revision: r.source_revision,
    status: r.status,
    failure_reason: r.failure_reason ?? null,
    percent: share?.percent ?? 0,
    tags: [...(share?.tags ?? [])],
  };
}

export function revisionDetail(r: RevisionRecord, shares: readonly RevisionShare[]): RevisionView {
  return { ...revisionSummary(r, shares), spec: publicSpec(r.spec) };
}

/** The stored list, or the default one, with `latest` resolved and each tag's host. */
export function trafficView(d: DeploymentRecord, at: EndpointAddress): TrafficTargetView[] {
  return trafficOf(d).map((t) => ({
    revision: t.latest ? d.revision : (t.revision ?? d.revision),
    latest: t.latest,
    percent: t.percent,
    tag: t.tag,
    url: t.tag === null ? null : `https://${withPort(tagHost(t.tag, d.name, at.domain, projectOf(d)), at.port)}`,
  }));
}

/**
 * One entry per revision traffic runs: every revision of a split (its desired count from
 * revision_desired), else the one revision everything goes to (desired_replicas). Ready counts
 * the routed component's ready replicas of that revision.
 */
export function revisionReplicas(d: DeploymentRecord, replicas: readonly ReplicaRecord[]): RevisionReplicasView[] {
  const component = routedComponent(d);
  const split = splitOf(d);
  const shares = split ?? resolveTraffic(d);
  return shares.map((share) => {
    const ready = replicas.filter((r) => r.deployment_id === d.id && r.revision === share.revision && r.component === component && r.state === 'ready').length;
    // Until the controller has written a split's counts: what it starts a revision of a split at.
    const fallback = split === null ? (d.desired_replicas?.[component] ?? specifiedReplicas(d, component)) : Math.max(1, specifiedReplicas(d, component));
    const desired = d.paused ? 0 : (d.revision_desired?.[String(share.revision)]?.[component] ?? fallback);
    return { revision: share.revision, percent: share.percent, tags: [...share.tags], ready, desired };
  });
}

export function renderDeployment(
  d: DeploymentRecord,
  replicas: ReplicaRecord[],
  at: EndpointAddress,
  status: DeploymentView['status'] = d.status,
): DeploymentView {
  const shares = resolveTraffic(d);
  return {
    id: d.id,
    family: d.family,
    name: d.name,
    cluster_id: d.cluster_id,
    status,
    status_reason: d.status_reason ?? null,
    paused: d.paused,
    endpoint_url: endpointUrl(d.name, at, projectOf(d)),
    endpoint_path_url: endpointPathUrl(d.name, at, d.spec.protocol, projectOf(d)),
    served_model: servedModel(d.spec),
    revision: d.revision,
    serving_revision: d.serving_revision ?? null,
    rollout: d.rollout ?? null,
    ...publicSpec(d.spec),
    ...scalingFields(d),
    endpoint_token_id: d.auth.token_id,
    client_certificate_id: d.auth.client_certificate_id,
    private_endpoint: d.auth.private_endpoint,
    ...limitsView(d),
    components: components(d, replicas),
    revisions: d.revisions.map((r) => revisionSummary(r, shares)),
    traffic: trafficView(d, at),
    traffic_is_default: d.traffic === undefined || d.traffic === null,
    rollout_mode: rolloutModeOf(d),
    autoscaling_metric: autoscalingMetricOf(d.scaling),
    autoscaling_target: autoscalingMetricOf(d.scaling) === 'concurrency' ? null : (d.scaling.autoscaling_target ?? null),
    revision_replicas: revisionReplicas(d, replicas),
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

/**
 * The limits with flow control as the gateway applies it: stored null reads as the defaults,
 * said so by flow_control_is_default, so a client sees the queue it gets without knowing them.
 */
function limitsView(d: DeploymentRecord): Pick<DeploymentView, 'max_request_body_bytes' | 'first_response_timeout_seconds' | 'rate_limit' | 'flow_control' | 'flow_control_is_default'> {
  const limits = limitsOf(d);
  return {
    ...limits,
    flow_control: structuredClone(limits.flow_control ?? DEFAULT_FLOW_CONTROL),
    flow_control_is_default: limits.flow_control === null,
  };
}

/** What rendering a credential needs of a deployment: a record, or the record index's entry. */
export type DeploymentBinding = Pick<DeploymentRecord, 'id'> & { auth: Pick<DeploymentRecord['auth'], 'token_id' | 'client_certificate_id'> };

/** `deployments`: those that may be bound to it (all of them, or the index's candidates). */
export function renderToken(t: TokenRecord, deployments: readonly DeploymentBinding[]): TokenView {
  return {
    id: t.id,
    name: t.name,
    max_priority: t.max_priority ?? null,
    created_at: t.created_at,
    deployments: deployments.filter((d) => d.auth.token_id === t.id).map((d) => d.id),
  };
}

export function renderServiceAccount(a: ServiceAccountRecord): ServiceAccountView {
  const membership = serviceAccountMembership(a);
  return { id: a.id, name: a.name, role: membership?.role ?? 'admin', project: membership?.project ?? null, created_at: a.created_at };
}

/** Never the key, sealed or not: the private key leaves only through the .pem route. */
export function renderCertificate(c: CertificateRecord, deployments: readonly DeploymentBinding[]): CertificateView {
  return {
    id: c.id,
    name: c.name,
    deployment_id: c.deployment_id,
    deployments: [...new Set(deployments.filter((d) => acceptsCertificate(d, c)).map((d) => d.id))],
    max_priority: c.max_priority ?? null,
    serial: c.serial,
    fingerprint_sha256: c.fingerprint_sha256,
    key_type: keyTypeOfRecord(c),
    not_after: c.not_after,
    revoked: c.revoked_at !== null,
    revoked_at: c.revoked_at,
    created_at: c.created_at,
    pem_path: `/certificates/${c.id}/pem`,
  };
}
