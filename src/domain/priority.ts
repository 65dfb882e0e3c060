// Owns the request priority classes of flow control: what `X-Priority` may say, their order,
// and how a credential's cap demotes a request that asks for more than it may. Pure: the
// gateway, the control API, the console and the CLI share these names and rules.

/** Highest first: a critical request is dispatched before any standard one, and so on. */
export const PRIORITIES = ['critical', 'standard', 'sheddable'] as const;
export type Priority = (typeof PRIORITIES)[number];

/** What a request without `X-Priority` is. */
export const DEFAULT_PRIORITY: Priority = 'standard';

/** 0 for critical, 1 standard, 2 sheddable: a lower rank is served first and shed last. */
export function priorityRank(p: Priority): number {
  return p === 'critical' ? 0 : p === 'standard' ? 1 : 2;
}

export function isPriority(v: unknown): v is Priority {
  return v === 'critical' || v === 'standard' || v === 'sheddable';
}

/**
 * The class of a request: the header's value (case-insensitive, surrounding spaces ignored),
 * the default when absent or empty, null when it names no class (the caller answers 400).
 */
export function parsePriority(header: string | string[] | undefined): Priority | null {
  if (header === undefined) return DEFAULT_PRIORITY;
  if (Array.isArray(header)) return header.length === 1 ? parsePriority(header[0]) : null;
  const v = header.trim().toLowerCase();
  if (v === '') return DEFAULT_PRIORITY;
  return isPriority(v) ? v : null;
}

/**
 * A credential may carry the highest class it may ask for: a request above it is demoted to
 * it, never refused. No cap (null): any class.
 */
export function cappedPriority(asked: Priority, cap: Priority | null): Priority {
  if (cap === null) return asked;
  return priorityRank(asked) < priorityRank(cap) ? cap : asked;
}
