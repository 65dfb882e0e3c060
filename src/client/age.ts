// Owns how the client shows how old something is, kubectl's way: one unit, rounded down —
// 45s, 12m, 3h, 5d — so an AGE column stays narrow and reads at a glance.

/** The age of `since` (ISO 8601) at `now`: "45s", "12m", "3h", "5d"; "-" when unknown. */
export function age(since: string | null | undefined, now: number = Date.now()): string {
  const start = since ? Date.parse(since) : NaN;
  if (Number.isNaN(start)) return '-';
  // The client's clock may be a little behind the server's: a moment ago, not a negative age.
  const seconds = Math.max(0, Math.floor((now - start) / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}
