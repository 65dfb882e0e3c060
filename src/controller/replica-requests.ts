// Owns what a replica is asked to run: per revision, each component's plan (how many replicas,
// the GPUs each holds, what its spec says of one), and the request handed to the runtime, joined
// to the host's part — hardware, GPUs, and the secrets it needs unsealed (registry credentials,
// the model-hub token, secret environment variables), never logged.

import { containerCapabilitiesOf } from '../domain/container-capabilities.js';
import { COMPONENT, usesGpuInstance } from '../domain/components.js';
import type { Logger } from 'pino';
import type { DeploymentRecord, DeploymentSpec, GeneralSpec } from '../domain/records.js';
import type { ReplicaRequest, ReplicaSpec } from '../runtime/runtime.js';
import type { EventNote } from '../store/event-writer.js';
import type { Store } from '../store/store.js';
import { appliedCount } from '../domain/traffic.js';
import { initialReplicasOf } from '../domain/initial-scale.js';
import { normaliseRegistryHost, REGISTRY_CREDENTIAL_EVENTS, registryHostOf, unboundCredentialMessage } from '../domain/registry-hosts.js';
import { desiredReplicas, GENERAL_COMPONENT, splitFigure, splitReplicas } from './desired.js';
import { orchestratedDesired, orchestratedRequest } from './orchestrated.js';
import { workersFilePath } from './workers-file.js';

/** One component of a deployment as the controller runs it. */
export interface ComponentPlan {
  component: string;
  desired: number;
  /** GPUs each replica holds (its hardware instance's; 0 for the CPU-only Frontend). */
  gpus: number;
  /** What a revision's spec says of a replica; null when that spec cannot run here. */
  request(spec: DeploymentSpec, revision: number, name: string): ReplicaSpec | null;
}

/** What the requests are made from: the controller's options of them. */
export interface RequestOptions {
  logger: Logger;
  autoscaled?: (deploymentId: number, revision: number | null) => number | undefined;
  workersDir?: string;
  unseal?: (sealed: string) => string;
  gpusPerReplica?: (d: DeploymentRecord, component: string) => number;
  hardwareOf?: (d: DeploymentRecord, component: string) => ReplicaRequest['hardware'];
}

export class ReplicaRequests {
  constructor(
    private readonly opts: RequestOptions,
    /** The fenced store (the vault's registry credentials are read from it). */
    private readonly store: Store,
    /** Records an event of a deployment (a registry credential withheld). */
    private readonly recordEvent: (deploymentId: number, note: EventNote) => void,
  ) {}

  /**
   * What each component of one revision runs and how many (`split`: that revision's number
   * while traffic splits between revisions, each scaled on its own; null: the one revision
   * traffic names, scaled as the deployment). The same for a pass and for taking back
   * leftovers. The revision's own spec shapes its components.
   */
  componentPlans(d: DeploymentRecord, spec: DeploymentSpec, split: number | null): ComponentPlan[] {
    const { autoscaled, workersDir } = this.opts;
    const view: DeploymentRecord = { ...d, spec };
    if (spec.family === 'general') {
      let desired: number;
      if (split === null) {
        // Until the autoscaler has decided for a deployment: what was last applied, or for a new
        // one its initial scale — by default at least one replica, so its revision is seen to
        // become ready before going to zero (domain/initial-scale.ts).
        const figure = autoscaled ? (autoscaled(d.id, null) ?? appliedCount(d, GENERAL_COMPONENT) ?? initialReplicasOf(d.scaling)) : undefined;
        desired = desiredReplicas(view, figure, autoscaled !== undefined)[GENERAL_COMPONENT] ?? 0;
      } else {
        desired = splitReplicas(d, splitFigure(d, split, GENERAL_COMPONENT, autoscaled?.(d.id, split)));
      }
      return [
        {
          component: GENERAL_COMPONENT,
          desired,
          gpus: this.opts.gpusPerReplica?.(d, GENERAL_COMPONENT) ?? 1,
          request: (spec, revision, name) => (spec.family === 'general' ? generalRequest(d, spec, revision, name, this.secretEnv(d, spec)) : null),
        },
      ];
    }
    if (!workersDir) return [];
    const counts =
      split === null ? orchestratedDesired(view, autoscaled?.(d.id, null)) : orchestratedDesired(view, splitFigure(d, split, COMPONENT.Worker, autoscaled?.(d.id, split)), true);
    return Object.entries(counts).map(([component, n]) => ({
      component,
      desired: n,
      gpus: usesGpuInstance(component) ? (this.opts.gpusPerReplica?.(d, component) ?? 1) : 0,
      request: (spec, revision, name) =>
        spec.family === 'orchestrated'
          ? orchestratedRequest(d, spec, component, revision, name, workersFilePath(workersDir, d.id, revision), this.hubToken(spec), this.secretEnv(d, spec))
          : null,
    }));
  }

  /**
   * The registry credentials of a general spec, unsealed — its own, or the vault's it names —
   * never logged. Ones that cannot be read leave the pull without credentials, which the
   * registry then refuses in words the deployment's status shows. A vault credential goes only
   * to the registry host it is bound to: the API refuses any other use, and this is checked
   * again here, whatever wrote the spec; one bound elsewhere, or to no host, is not sent (a
   * log line and an event say so).
   */
  private async registryAuth(d: DeploymentRecord, spec: DeploymentSpec): Promise<ReplicaRequest['registryAuth']> {
    if (spec.family !== 'general') return null;
    let username: string | null = spec.registry_username;
    let sealed = spec.secrets.registry_password;
    const fromVault = spec.registry_credential_id ?? null;
    if (fromVault !== null) {
      const found = (await this.store.get('registry_credential', fromVault))?.value;
      if (found === undefined) {
        this.opts.logger.error({ deployment: d.name, registry_credential: fromVault }, 'the registry credential this deployment names is not in the vault; the image is pulled without credentials');
        return null;
      }
      const host = registryHostOf(spec.image);
      const bound = found.registry ?? null;
      if (bound === null || normaliseRegistryHost(bound) !== host) {
        const message =
          bound === null
            ? `${unboundCredentialMessage(found)}; the image is pulled without it`
            : `registry credential "${found.name}" (id ${found.id}) is bound to the registry ${bound}, and image ${spec.image} is pulled from ${host}: its password is not sent there; the image is pulled without it`;
        this.opts.logger.error({ deployment: d.name, registry_credential: found.id, bound_to: bound, image_registry: host }, message);
        this.recordEvent(d.id, { type: 'warning', reason: bound === null ? REGISTRY_CREDENTIAL_EVENTS.unbound : REGISTRY_CREDENTIAL_EVENTS.withheld, message });
        return null;
      }
      username = found.username;
      sealed = found.sealed_password;
    }
    if (username === null || sealed === undefined) return null;
    try {
      if (!this.opts.unseal) throw new Error('no unsealer');
      return { username, password: this.opts.unseal(sealed) };
    } catch {
      this.opts.logger.error({ deployment: d.name }, 'the registry password cannot be unsealed (was the secret key changed?); the image is pulled without credentials');
      return null;
    }
  }

  /** The spec's part of a replica request joined to the host's: its hardware, GPUs and registry credentials. */
  async completeRequest(d: DeploymentRecord, plan: ComponentPlan, spec: DeploymentSpec, part: ReplicaSpec): Promise<ReplicaRequest> {
    const hardware = plan.gpus > 0 ? (this.opts.hardwareOf?.(d, plan.component) ?? null) : null;
    return { ...part, gpus: plan.gpus, hardware, registryAuth: await this.registryAuth(d, spec) };
  }

  /** The model-hub token, unsealed for the workers' credential file; never logged. */
  private hubToken(spec: DeploymentSpec): string | null {
    const sealed = spec.family === 'orchestrated' ? spec.secrets.model_hub_token : undefined;
    if (sealed === undefined || !this.opts.unseal) return null;
    try {
      return this.opts.unseal(sealed);
    } catch {
      this.opts.logger.error('the model hub token cannot be unsealed (was the secret key changed?); workers start without it');
      return null;
    }
  }

  /**
   * The secret environment variables of a revision's spec, unsealed for the replica's
   * environment. Never logged: one that cannot be unsealed is named (not its value) and left
   * out, and the replica starts without it.
   */
  private secretEnv(d: DeploymentRecord, spec: DeploymentSpec): Record<string, string> {
    const out: Record<string, string> = {};
    const sealed = Object.entries(spec.secrets.env ?? {});
    if (sealed.length === 0) return out;
    const { unseal, logger } = this.opts;
    for (const [name, value] of sealed) {
      try {
        if (!unseal) throw new Error('no unsealer');
        out[name] = unseal(value);
      } catch {
        logger.error({ deployment: d.name, variable: name }, `the secret environment variable ${name} cannot be unsealed (was the secret key changed?); the replica starts without it`);
      }
    }
    return out;
  }
}

/** `secretEnv`: the spec's secret variables, unsealed, joined to its plain ones (a name is never in both). */
function generalRequest(d: DeploymentRecord, spec: GeneralSpec, revision: number, name: string, secretEnv: Record<string, string>): ReplicaSpec {
  return {
    name,
    deploymentId: d.id,
    revision,
    component: GENERAL_COMPONENT,
    image: spec.image,
    tag: spec.tag,
    command: spec.command,
    env: { ...spec.env, ...secretEnv },
    configFile: spec.config_file,
    containerPort: spec.container_port,
    protocol: spec.protocol,
    healthPath: spec.health_check_path,
    metricsPort: spec.metrics_port,
    metricsPath: spec.metrics_path,
    logging: spec.enable_logging,
    modelCaching: spec.enable_model_caching,
    containerCapabilities: containerCapabilitiesOf(spec),
  };
}
