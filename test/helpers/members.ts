// Test helper: service accounts of a project with a role (owner, developer, viewer), written
// straight into the store, and project records with members, for tests of what each role
// may do. Returns the account's key.

import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../src/core/secrets.js';
import type { ProjectMember, ServiceAccountRecord } from '../../src/domain/records.js';
import { uniqueKey } from '../../src/control/caller.js';
import { SA_KEY_INDEX, SA_NAME_INDEX } from '../../src/control/credentials.js';
import { PROJECT_NAME_INDEX } from '../../src/control/project-upgrades.js';
import { modify, type Store } from '../../src/store/store.js';

export async function addMember(store: Store, name: string, project: string, role: ServiceAccountRecord['role']): Promise<string> {
  const key = `igk_${name}_${randomBytes(12).toString('hex')}`;
  const hash = sha256Hex(key);
  await store.create('service_account', (id) => ({ id, name, project, role, key_hash: hash, created_at: new Date().toISOString() }), {
    unique: [{ index: SA_NAME_INDEX, key: uniqueKey(project, name) }, { index: SA_KEY_INDEX, key: hash }],
  });
  return key;
}

/** A project record, as the admin's POST /projects makes it; one that exists (`default`, made at start-up) gets these members and quota. */
export async function addProject(store: Store, name: string, members: ProjectMember[] = [], gpuQuota: number | null = null): Promise<void> {
  const now = new Date().toISOString();
  const existing = await store.lookup(PROJECT_NAME_INDEX, name);
  if (existing) {
    await modify(store, 'project', existing.id, (p) => ({ ...p, members, gpu_quota: gpuQuota, updated_at: now }));
    return;
  }
  await store.create('project', (id) => ({ id, name, gpu_quota: gpuQuota, members, created_at: now, updated_at: now }), { unique: [{ index: PROJECT_NAME_INDEX, key: name }] });
}
