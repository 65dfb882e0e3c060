// Public entry point of the spec's request rules for both deployment families: create, PATCH
// (a partial body merged over the stored deployment) and clone (the source's request plus
// overrides). Each rule reports its own FieldProblem naming the field at fault (dotted path,
// e.g. `worker_pools.prefill.replicas`, `env.MY_VAR`); every problem found is returned, in
// the order of the family's field list (unknown fields first). On success the request becomes
// a DeploymentDraft: revision-bearing spec, scaling, endpoint auth and plain secrets (the
// caller seals them). Capacity (quota, instances) is domain/quota.ts's job. Pure: no I/O.
//
// The rules live in ./validation/, one concern per file. Imports point one way, so there
// are no cycles: types, shape <- credential-screen, autoscaling-rules, traffic-rules <-
// common-rules, auth-and-env-rules <- general-rules, orchestrated-rules <- pipeline <-
// patch-and-clone <- this file. A traffic list is checked against the revisions it will name
// (revision 1 for a create or clone; after its own spec change for a PATCH) once the request
// itself is valid.

import type { Family } from './records.js';
import { withTrafficChecked } from './validation/patch-and-clone.js';
import { notAnObject, validateRequest } from './validation/pipeline.js';
import { isObject } from './validation/shape.js';
import type { DeploymentDraft, Validation, ValidationContext } from './validation/types.js';

export type { DeploymentDraft, PatchResult, Validation, ValidationContext } from './validation/types.js';
export { toRequest, validateClone, validatePatch } from './validation/patch-and-clone.js';
export { pinnedForManualRollout } from './validation/traffic-rules.js';

export function validateCreate(family: Family, body: unknown, ctx: ValidationContext): Validation<DeploymentDraft> {
  if (!isObject(body)) return notAnObject();
  return withTrafficChecked(validateRequest(family, body, ctx, { mode: 'create', inherited: null, checkCertificate: true, releasedCertificate: null }), ctx);
}
