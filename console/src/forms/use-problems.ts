// Owns which problems a form shows and where. The browser's own findings appear once a field
// has been left (blur) or the form submitted; the server's refusal appears next to the field it
// names and stays until that field's value changes (so a 409 on the name goes away as soon as
// the name is edited). Problems naming no field on the page, and refusals with no field at all
// (403, 422 without a field), go to the form-level error. Every message is said with the labels
// the page shows (forms/labels: "Target concurrency per replica must be …", never
// "max_concurrency must be …"), wherever it came from. Nothing here touches the values: a
// refusal never clears what was typed.

import { useCallback, useEffect, useMemo, useState, type FocusEvent, type MouseEvent } from 'react';
import { ApiError } from '../api/client';
import { toProblems, type Problems } from '../components/form';
import { inLabels, labelFor } from './labels';
import { sameValue, type Body } from './spec-diff';

/** The top-level field of a dotted API field (`env.FOO` → `env`, `worker_pools.prefill.replicas` → `worker_pools`). */
export const topField = (field: string): string => field.split(/[.[]/)[0] ?? field;

/** `a` and `b` are the same field or one holds the other. */
const related = (a: string, b: string): boolean => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);

/**
 * For the submit button's onMouseDown: the field being left keeps focus until the click.
 * Otherwise its blur shows its problem first, the button moves down by that line before the
 * mouse comes up, and the click is lost. Keyboard activation is unaffected.
 */
export const keepFocusOnPress = (e: MouseEvent<HTMLElement>): void => e.preventDefault();

interface Refusal {
  problems: Problems;
  /** The body that was refused: a field's server problem shows while its value is unchanged. */
  body: Body;
  /** The refusal's own message when it names no field. */
  message: string | null;
}

export interface FormProblems {
  /** Problems to show, keyed by API field, in the page's words. */
  shown: Problems;
  /** The form-level message: a refusal with no field, or problems no control on the page shows. */
  formError: string | null;
  onBlur: (e: FocusEvent<HTMLElement>) => void;
  /** Marks the form submitted (every browser problem shows); true when none blocks sending. */
  submit: () => boolean;
  /** Records a refusal of `body`; any other error becomes the form-level message. */
  refused: (err: unknown, body: Body) => void;
  clearRefusal: () => void;
}

/**
 * `client`: what the browser's rules find in the current values; `body`: the current request
 * body; `placed`: the top-level API fields that have a control on this page.
 */
export function useProblems(client: Problems, body: Body, placed: readonly string[]): FormProblems {
  const [touched, setTouched] = useState<string[]>([]);
  const [submitted, setSubmitted] = useState(false);
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [focusTick, setFocusTick] = useState(0);

  const onBlur = useCallback((e: FocusEvent<HTMLElement>) => {
    // Field, CheckField and KeyValueEditor mark their wrapper with the API field name.
    const field = (e.target as HTMLElement).closest('[data-field]')?.getAttribute('data-field');
    if (field) setTouched((t) => (t.includes(field) ? t : [...t, field]));
  }, []);

  const shown = useMemo(() => {
    const out: Problems = {};
    for (const [field, message] of Object.entries(client)) {
      if (submitted || touched.some((t) => related(field, t))) out[field] = inLabels(message, undefined, field);
    }
    if (refusal) {
      for (const [field, message] of Object.entries(refusal.problems)) {
        const top = topField(field);
        if (sameValue(body[top], refusal.body[top])) out[field] = inLabels(message, undefined, field);
      }
    }
    return out;
  }, [client, body, refusal, submitted, touched]);

  const formError = useMemo(() => {
    const elsewhere = Object.entries(shown)
      .filter(([field]) => !placed.includes(topField(field)))
      // A message that starts with its field's label says which field already.
      .map(([field, message]) => (field === '' || message.startsWith(labelFor(field)) ? message : `${labelFor(field)}: ${message}`));
    const all = [...(refusal?.message ? [inLabels(refusal.message)] : []), ...elsewhere];
    return all.length > 0 ? all.join(' · ') : null;
  }, [shown, placed, refusal]);

  // After a submit or a refusal, move the keyboard to the first field in trouble.
  useEffect(() => {
    if (focusTick === 0) return;
    const first = document.querySelector<HTMLElement>('main [aria-invalid="true"], main .field.invalid input, main .field.invalid select, main .field.invalid textarea');
    first?.focus();
  }, [focusTick]);

  const submit = useCallback(() => {
    setSubmitted(true);
    const blocked = Object.keys(client).length > 0;
    if (blocked) setFocusTick((n) => n + 1);
    return !blocked;
  }, [client]);

  const refused = useCallback((err: unknown, refusedBody: Body) => {
    if (err instanceof ApiError) {
      const list = err.problems();
      setRefusal({ problems: toProblems(list), body: refusedBody, message: list.length === 0 ? err.message : null });
    } else {
      setRefusal({ problems: {}, body: refusedBody, message: err instanceof Error ? err.message : String(err) });
    }
    setFocusTick((n) => n + 1);
  }, []);

  const clearRefusal = useCallback(() => setRefusal(null), []);

  return { shown, formError, onBlur, submit, refused, clearRefusal };
}
