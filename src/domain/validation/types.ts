// Owns the types the validation modules share: the public ones (context, draft, results),
// re-exported unchanged by ../validate.ts, and the per-call Options every rule module reads.
// They live here, not in validate.ts, so the rule modules never import their own entry point.

import type { FieldProblem } from '../../core/errors.js';
import type { Catalog } from '../catalog.js';
import type { ImageMap } from '../image-map.js';
import type { BoundCredential } from '../registry-hosts.js';
import type { DeploymentRecord, DeploymentSpec, EndpointLimits, Family, ScalingSpec, SealedSecrets } from '../records.js';
import type { RolloutMode, TrafficTarget } from '../traffic.js';

export interface ValidationContext {
  catalog: Catalog;
  /** sha256 hex, the same hash the vault stores. */
  hashToken(value: string): string;
  /** Hashes of every live endpoint token. */
  liveTokenHashes: ReadonlySet<string>;
  /**
   * Hashes (same function) of every service-account key: platform credentials, which must
   * never protect an endpoint nor reach a replica's environment.
   */
  platformKeyHashes: ReadonlySet<string>;
  /** Ids of the vault's endpoint tokens (bound by id with endpoint_token_id). */
  tokenIds: ReadonlySet<number>;
  /** Existing, unrevoked client certificates. */
  certificateIds: ReadonlySet<number>;
  /**
   * Registry credentials in the vault (bound by id with registry_credential_id), with the
   * registry host each is bound to (null: none yet, so it cannot be used); absent: none.
   */
  registryCredentials?: ReadonlyMap<number, BoundCredential>;
  /** Names of the other live deployments (both families). */
  takenNames: ReadonlySet<string>;
  /**
   * The other live deployments' names and traffic: a tag's host `<tag>-<name>` must be no
   * other deployment's name nor another tag's host, and a new name no tag's host. Absent: none.
   */
  otherDeployments?: readonly Pick<DeploymentRecord, 'name' | 'traffic'>[];
  /** What the runtime runs for each image: an unknown image needs a command. */
  images: ImageMap;
  /** The runtime runs the image itself (containers): an empty command means the image's own entrypoint. */
  imagesRunThemselves?: boolean;
}

export interface DeploymentDraft {
  family: Family;
  name: string;
  cluster_id: number;
  /** spec.secrets is always {}: the caller seals `plainSecrets` into it. */
  spec: DeploymentSpec;
  /**
   * A key absent = keep the sealed one, null = clear it, a string = replace it. `env`: the
   * secret environment variables the request sets (a string) or removes (null), by name; a
   * name absent keeps its sealed value. Absent when the request changes none.
   */
  plainSecrets: { registry_password?: string | null; model_hub_token?: string | null; env?: Record<string, string | null> };
  scaling: ScalingSpec;
  limits: EndpointLimits;
  /**
   * How requests split between revisions, as stored (null: everything to the newest). For a
   * PATCH, what the deployment holds after it: the body's list, the stored one, or — a spec
   * change in manual mode — the stored one with `latest` pinned to the previous revision.
   */
  traffic: TrafficTarget[] | null;
  rollout_mode: RolloutMode;
  /** token_value set: bind that value (the caller finds or creates its vault entry). */
  auth: { token_value: string | null; token_id: number | null; client_certificate_id: number | null; private_endpoint: boolean };
}

export type Validation<T> = { ok: true; value: T } | { ok: false; problems: FieldProblem[] };

export interface PatchResult {
  draft: DeploymentDraft;
  /** A revision-bearing field or a secret changed: the caller makes a new revision. */
  specChanged: boolean;
  /** Replica counts, concurrency target, cooldown or pool sizes changed: scale in place. */
  scalingChanged: boolean;
  /** Endpoint limits (body size, first-response timeout, rate, flow control) changed: the gateways apply them at once, no revision. */
  limitsChanged: boolean;
  authChanged: boolean;
  /** The traffic list changed (the body's, or pinned by a spec change in manual mode): applied at once, no revision. */
  trafficChanged: boolean;
  /** rollout_mode changed: applied at once, no revision. */
  rolloutModeChanged: boolean;
}

/** How a request is validated: create, PATCH (over the stored deployment) or clone. */
export interface Options {
  mode: 'create' | 'patch' | 'clone';
  /** What the stored deployment (patch) or the clone's source already holds. */
  inherited: { token_id: number | null; secrets: SealedSecrets } | null;
  /** Check client_certificate_id against the context (patch: only when the body sets it). */
  checkCertificate: boolean;
  /**
   * Check that the vault registry credential is bound to the image's registry host (patch:
   * only when the body names registry_credential_id, so scaling a deployment whose older
   * credential awaits an admin's binding is not refused); absent: checked.
   */
  checkCredentialHost?: boolean;
  /**
   * The certificate the body's `private_endpoint: false` takes away from the stored
   * deployment (patch) or the clone's source, or null: when nothing protects the endpoint
   * afterwards, the refusal names private_endpoint and says why.
   */
  releasedCertificate: number | null;
}
