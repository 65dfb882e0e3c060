// Owns the project records as the control API reads and changes them: find one by name (the
// store's unique index of names), list them, create one, set its GPU quota, delete one, and
// set or remove a member. `default` is made on first use when the start-up migration has not
// made it yet, so a fresh store answers as one that has it. Member rules: subjects are
// `user:<e-mail address>` (kept lowercase) or `group:<group name>`; a project's owner may not
// remove or demote its last owner (the project would be left to the admin alone), while the
// admin may leave a project with no owner — an admin-managed project.

import { isoNow, type Clock } from '../core/clock.js';
import { PlatformError } from '../core/errors.js';
import { DEFAULT_PROJECT, type ProjectRole } from '../domain/access.js';
import { GROUP_SUBJECT_PREFIX, USER_SUBJECT_PREFIX } from '../domain/membership.js';
import type { ProjectMember, ProjectRecord } from '../domain/records.js';
import { ConflictError, modify, type Store } from '../store/store.js';
import { PROJECT_NAME_INDEX } from './deployment-service.js';

const EMAIL = /^[^\s@<>()[\],;:"]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;
// Identity providers name groups freely (spaces included); control characters never.
const GROUP = /^[^\p{Cc}]{1,200}$/u;

/** A member subject as stored (an e-mail address lowercased), or a 400 naming `subject`. */
export function normaliseSubject(subject: string): string {
  if (subject.startsWith(USER_SUBJECT_PREFIX)) {
    const email = subject.slice(USER_SUBJECT_PREFIX.length);
    if (EMAIL.test(email)) return `${USER_SUBJECT_PREFIX}${email.toLowerCase()}`;
  } else if (subject.startsWith(GROUP_SUBJECT_PREFIX)) {
    const group = subject.slice(GROUP_SUBJECT_PREFIX.length);
    if (GROUP.test(group) && group.trim() === group) return subject;
  }
  throw new PlatformError('invalid_field', `subject must be user:<e-mail address> or group:<group name>, got ${JSON.stringify(subject.slice(0, 80))}`, { field: 'subject' });
}

export class ProjectDirectory {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** The project named `name`; `default` is made when missing. */
  async find(name: string): Promise<ProjectRecord | undefined> {
    const hit = await this.store.lookup(PROJECT_NAME_INDEX, name);
    const found = hit?.kind === 'project' ? (await this.store.get('project', hit.id))?.value : undefined;
    if (found === undefined && name === DEFAULT_PROJECT) return this.ensureDefault();
    return found;
  }

  /** The project, or the 404 a caller who cannot see it gets too. */
  async get(name: string): Promise<ProjectRecord> {
    const found = await this.find(name);
    if (!found) throw new PlatformError('not_found', `no project named ${name}`);
    return found;
  }

  /** Every project, `default` among them. */
  async list(): Promise<ProjectRecord[]> {
    const all = (await this.store.list('project')).map((p) => p.value);
    if (!all.some((p) => p.name === DEFAULT_PROJECT)) all.push(await this.ensureDefault());
    return all.sort((a, b) => a.name.localeCompare(b.name));
  }

  async create(name: string, gpuQuota: number | null): Promise<ProjectRecord> {
    const now = isoNow(this.clock);
    try {
      return (
        await this.store.create('project', (id) => ({ id, name, gpu_quota: gpuQuota, members: [], created_at: now, updated_at: now }), {
          unique: [{ index: PROJECT_NAME_INDEX, key: name }],
        })
      ).value;
    } catch (err) {
      if (err instanceof ConflictError) throw new PlatformError('conflict', `a project named ${name} already exists`, { field: 'name' });
      throw err;
    }
  }

  async setQuota(name: string, gpuQuota: number | null): Promise<ProjectRecord> {
    const p = await this.get(name);
    return (await modify(this.store, 'project', p.id, (current) => (current.gpu_quota === gpuQuota ? undefined : { ...current, gpu_quota: gpuQuota, updated_at: isoNow(this.clock) }))).value;
  }

  async delete(name: string): Promise<void> {
    const p = await this.get(name);
    await this.store.delete('project', p.id);
  }

  /**
   * Adds a member or changes its role. `byAdmin`: the platform admin may leave the project
   * without an owner; an owner may not demote the last one.
   */
  async setMember(name: string, subject: string, role: ProjectRole, byAdmin: boolean): Promise<ProjectMember> {
    const p = await this.get(name);
    await modify(this.store, 'project', p.id, (current) => {
      const members = current.members.filter((m) => m.subject !== subject);
      const before = current.members.find((m) => m.subject === subject);
      if (before?.role === role) return undefined;
      const next = [...members, { subject, role }].sort((a, b) => a.subject.localeCompare(b.subject));
      if (!byAdmin) keepsAnOwner(current, next);
      return { ...current, members: next, updated_at: isoNow(this.clock) };
    });
    return { subject, role };
  }

  /** Removes a member; 404 when the subject is not one. */
  async removeMember(name: string, subject: string, byAdmin: boolean): Promise<void> {
    const p = await this.get(name);
    await modify(this.store, 'project', p.id, (current) => {
      if (!current.members.some((m) => m.subject === subject)) throw new PlatformError('not_found', `${subject} is not a member of project ${name}`);
      const next = current.members.filter((m) => m.subject !== subject);
      if (!byAdmin) keepsAnOwner(current, next);
      return { ...current, members: next, updated_at: isoNow(this.clock) };
    });
  }

  /** `default`, made now when the start-up migration has not made it (a concurrent maker wins). */
  private async ensureDefault(): Promise<ProjectRecord> {
    try {
      return await this.create(DEFAULT_PROJECT, null);
    } catch (err) {
      if (!(err instanceof PlatformError && err.code === 'conflict')) throw err;
      const hit = await this.store.lookup(PROJECT_NAME_INDEX, DEFAULT_PROJECT);
      const found = hit ? (await this.store.get('project', hit.id))?.value : undefined;
      if (!found) throw err;
      return found;
    }
  }
}

/** 409 when an owner's change would leave a project that had an owner member with none. */
function keepsAnOwner(before: ProjectRecord, after: readonly ProjectMember[]): void {
  const had = before.members.some((m) => m.role === 'owner');
  if (had && !after.some((m) => m.role === 'owner')) {
    throw new PlatformError('conflict', `project ${before.name} must keep an owner: make another member owner first (only the platform admin may leave a project without one)`);
  }
}
