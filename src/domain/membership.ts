// Owns how a caller's roles follow from the records: a service account's one project and
// role (older `member` accounts read as developers of `default`), and a person's roles from
// the projects' member lists, by their e-mail address or one of their identity provider's
// groups, the highest role winning. Pure: the caller reads the records.

import { DEFAULT_PROJECT, PROJECT_ROLES, type ProjectRole } from './access.js';
import type { ProjectRecord, ServiceAccountRecord } from './records.js';

export const USER_SUBJECT_PREFIX = 'user:';
export const GROUP_SUBJECT_PREFIX = 'group:';

/** The higher of two roles (owner > developer > viewer). */
export function higherRole(a: ProjectRole | null, b: ProjectRole | null): ProjectRole | null {
  if (a === null) return b;
  if (b === null) return a;
  return PROJECT_ROLES.indexOf(a) <= PROJECT_ROLES.indexOf(b) ? a : b;
}

/** A service account's project and role; null for the platform admin. */
export function serviceAccountMembership(account: Pick<ServiceAccountRecord, 'role' | 'project'>): { project: string; role: ProjectRole } | null {
  if (account.role === 'admin') return null;
  const role: ProjectRole = account.role === 'member' ? 'developer' : account.role;
  return { project: account.project ?? DEFAULT_PROJECT, role };
}

/** A person's role in each project they belong to, by e-mail address or group. */
export function rolesOfPerson(person: { email: string | null; groups: readonly string[] }, projects: readonly ProjectRecord[]): Map<string, ProjectRole> {
  const subjects = new Set<string>(person.groups.map((g) => `${GROUP_SUBJECT_PREFIX}${g}`));
  if (person.email) subjects.add(`${USER_SUBJECT_PREFIX}${person.email.toLowerCase()}`);
  const roles = new Map<string, ProjectRole>();
  for (const p of projects) {
    let role: ProjectRole | null = null;
    for (const m of p.members) if (subjects.has(m.subject.toLowerCase())) role = higherRole(role, m.role);
    if (role !== null) roles.set(p.name, role);
  }
  return roles;
}
