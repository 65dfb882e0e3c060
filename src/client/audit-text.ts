// Owns how `infergate audit` reads its flags and prints entries: --since/--until as a time ago
// (30m, 2h, 7d) or an ISO time, and the table — TIME, ACTOR, ROLE, PROJECT, ACTION, TARGET,
// RESULT, STATUS — newest first as the API sends them.

import type { AuditRecord } from '../domain/records.js';
import { UsageError } from './errors.js';
import { table, type Column, type Out } from './output.js';

export type AuditEntry = AuditRecord;

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `1h` (that long ago), or an ISO time, as the ISO time the API takes. */
export function timeFlag(option: string, raw: string, now: number = Date.now()): string {
  const ago = /^(\d+)([smhd])$/.exec(raw);
  if (ago) return new Date(now - Number(ago[1]) * UNIT_MS[ago[2]!]!).toISOString();
  const at = Date.parse(raw);
  if (Number.isNaN(at) || !/^\d{4}-\d{2}-\d{2}/.test(raw)) throw new UsageError(`${option} must be a time ago (30m, 2h, 7d) or an ISO time (2026-11-01T09:00:00Z), not "${raw}"`);
  return new Date(at).toISOString();
}

/** Who: the account or person, else "anonymous" (a call without a valid credential). */
const actorText = (e: AuditEntry): string => (e.actor.kind === 'anonymous' ? '(anonymous)' : (e.actor.name ?? `${e.actor.kind} ${e.actor.id ?? ''}`.trim()));

/** What: `token 3 (chat-clients)`. */
export function targetText(target: AuditEntry['target']): string {
  if (target === null) return '-';
  const id = target.id === null ? '' : ` ${target.id}`;
  return `${target.kind}${id}${target.name !== null ? ` (${target.name})` : ''}`;
}

const columns: Column<AuditEntry>[] = [
  { header: 'TIME', value: (e) => e.time.replace(/\.\d+Z$/, 'Z') },
  { header: 'ACTOR', value: actorText },
  { header: 'ROLE', value: (e) => e.role ?? '-' },
  { header: 'PROJECT', value: (e) => e.project ?? '-' },
  { header: 'ACTION', value: (e) => e.action },
  { header: 'TARGET', value: (e) => targetText(e.target) },
  { header: 'RESULT', value: (e) => e.result },
  { header: 'STATUS', value: (e) => String(e.status) },
];

export function auditTable(entries: readonly AuditEntry[], out: Out): string {
  return entries.length === 0 ? 'no audit entries\n' : table(entries, columns, out);
}
