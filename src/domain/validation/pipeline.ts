// Owns one validation run, shared by create, PATCH and clone: shape first, then the
// credential screen (before any rule can quote a field's value), then the family's rules,
// then every problem in a stable, documented order (unknown fields first, then the family's
// field list) so clients and tests see the same list for the same mistakes.

import type { FieldProblem } from '../../core/errors.js';
import type { Family } from '../records.js';
import { validateGeneral } from './general-rules.js';
import { validateOrchestrated } from './orchestrated-rules.js';
import { findPreset, presetFields } from '../presets.js';
import { screenCredentials } from './credential-screen.js';
import { checkShape, FIELDS, Req, type Obj } from './shape.js';
import type { DeploymentDraft, Options, Validation, ValidationContext } from './types.js';

/** Unknown and foreign fields first, then the family's field order; stable within a field. */
function ordered(family: Family, problems: FieldProblem[]): FieldProblem[] {
  const order = [...FIELDS[family].keys()];
  const rank = (p: FieldProblem): number => {
    if (p.field === '') return -2;
    // `traffic[1].percent` ranks as `traffic`.
    return order.indexOf(p.field.split(/[.[]/)[0] ?? '');
  };
  return [...problems].sort((a, b) => rank(a) - rank(b));
}

/**
 * A general request naming a known preset, with the preset's fields laid under the request's
 * own: whatever the user gives wins, the rest comes from the recipe (never the command).
 */
export function withPresetDefaults(family: Family, raw: Obj): Obj {
  const preset = family === 'general' && typeof raw.preset === 'string' ? findPreset(raw.preset) : undefined;
  return preset ? { ...presetFields(preset), ...raw } : raw;
}

export function validateRequest(family: Family, raw: Obj, ctx: ValidationContext, opts: Options, extra: FieldProblem[] = []): Validation<DeploymentDraft> {
  const req = new Req(family, withPresetDefaults(family, raw));
  req.problems.push(...extra);
  checkShape(req);
  screenCredentials(req, ctx);
  const draft = family === 'general' ? validateGeneral(req, ctx, opts) : validateOrchestrated(req, ctx, opts);
  if (req.problems.length > 0 || draft === undefined) return { ok: false, problems: ordered(family, req.problems) };
  return { ok: true, value: draft };
}

export const notAnObject = (): Validation<never> => ({
  ok: false,
  problems: [{ field: '', message: 'the request body must be a JSON object', code: 'invalid_request' }],
});
