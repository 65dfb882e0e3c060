// Owns what a change to a deployment will do before it is sent: the PATCH body (only the
// fields that differ from the deployment as it stands) and its effect, classified by the
// control API's revisions table: replica fields scale in place, endpoint credentials and
// gateway limits take effect at once, anything else (spec fields and secrets) makes revision
// N+1, a rolling update. The server decides in the end; this is the forecast shown to the
// user — by the console's Settings tab and by `infergate apply`. Pure and without imports,
// so the console's bundle can take it as it is.

export type Body = Record<string, unknown>;

/** Replica counts, the concurrency target, the autoscaling signal and the cooldown: scaled in place, same revision. */
export const SCALE_FIELDS: readonly string[] = ['min_replicas', 'max_replicas', 'initial_replicas', 'max_concurrency', 'concurrency', 'cooldown_period', 'autoscaling_metric', 'autoscaling_target'];

/** Endpoint credentials, gateway limits and traffic between revisions: applied at once, no revision, no restart. */
export const AT_ONCE_FIELDS: readonly string[] = [
  'endpoint_bearer_token', 'endpoint_token_id', 'client_certificate_id', 'private_endpoint', 'max_request_body_bytes', 'first_response_timeout_seconds', 'rate_limit', 'flow_control',
  'traffic', 'rollout_mode',
];

export type Effect = 'none' | 'scale' | 'at_once' | 'revision';

export interface PatchPlan {
  patch: Body;
  effect: Effect;
  /** One sentence (or a few) saying what the save will do; shown before confirming. */
  statement: string;
  revisionFields: string[];
  scaleFields: string[];
  atOnceFields: string[];
}

/** Structural equality of JSON values; key order does not matter, undefined keys are absent. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left).filter((k) => left[k] !== undefined);
  const other = Object.keys(right).filter((k) => right[k] !== undefined);
  return keys.length === other.length && keys.every((k) => sameValue(left[k], right[k]));
}

/**
 * The fields of `next` that differ from `current`. A field `current` has and `next` leaves
 * out is sent as null, which the API reads as "clear it / back to the default".
 */
export function diffBodies(current: Body, next: Body): Body {
  const patch: Body = {};
  for (const key of new Set([...Object.keys(current), ...Object.keys(next)])) {
    const before = current[key] ?? null;
    const after = next[key] ?? null;
    if (!sameValue(before, after)) patch[key] = after;
  }
  return patch;
}

const list = (fields: string[]) => fields.join(', ');

export function classifyPatch(patch: Body, currentRevision: number): PatchPlan {
  const fields = Object.keys(patch);
  const scaleFields = fields.filter((f) => SCALE_FIELDS.includes(f));
  const atOnceFields = fields.filter((f) => AT_ONCE_FIELDS.includes(f));
  const revisionFields = fields.filter((f) => !SCALE_FIELDS.includes(f) && !AT_ONCE_FIELDS.includes(f));
  const atOnce = atOnceFields.length > 0 ? `Endpoint credentials and limits (${list(atOnceFields)}) take effect at once.` : '';
  let effect: Effect;
  let statement: string;
  if (revisionFields.length > 0) {
    effect = 'revision';
    const scale = scaleFields.length > 0 ? ` Replica settings (${list(scaleFields)}) change with it.` : '';
    statement =
      `Creates revision ${currentRevision + 1} (a rolling update): ${list(revisionFields)} changed; ` +
      `new replicas start and replace the current ones once ready.${scale}${atOnce ? ` ${atOnce}` : ''}`;
  } else if (scaleFields.length > 0) {
    effect = 'scale';
    statement = `Scales in place; no new revision (${list(scaleFields)}).${atOnce ? ` ${atOnce}` : ''}`;
  } else if (atOnceFields.length > 0) {
    effect = 'at_once';
    statement = `Takes effect at once; no revision (${list(atOnceFields)}).`;
  } else {
    effect = 'none';
    statement = 'No changes to save.';
  }
  return { patch, effect, statement, revisionFields, scaleFields, atOnceFields };
}

/** What the answer to the PATCH says happened, for the line shown after saving. */
export function savedMessage(before: { revision: number }, after: { revision: number }, plan: PatchPlan): string {
  if (after.revision > before.revision) return `Saved: revision ${after.revision} is rolling out`;
  if (plan.effect === 'scale') return 'Saved: scaled in place';
  if (plan.effect === 'at_once') return 'Saved: took effect at once';
  return 'Saved: nothing changed';
}
