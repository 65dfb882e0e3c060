// Test helper: the one way tests wait for something — poll a probe until it yields a value
// (anything but undefined, null or false), and fail with what was awaited and the last value
// seen. Tests wait on a condition, never for a fixed time: a fixed wait passes on a fast
// machine for the wrong reason and flakes on a slow one.

export type Settled<T> = Exclude<T, undefined | null | false>;

/**
 * Resolves with the first value of `probe` that is not undefined, null or false (a boolean
 * probe resolves with `true`); rejects after `ms`, naming `what` and the last value seen.
 * A probe that throws ends the wait with its error: that is how a probe says "this will
 * never happen" (the process exited), rather than letting the wait run out.
 */
export async function waitFor<T>(probe: () => T | Promise<T>, ms = 2000, what = 'condition', interval = 10): Promise<Settled<T>> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    last = await probe();
    if (last !== undefined && last !== null && last !== false) return last as Settled<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${describe(last)}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

function describe(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s === undefined ? String(v) : s.slice(0, 500);
}
