// Test helper: the project and member routes in the shapes the control API answers them
// (GET/POST /projects, PATCH/DELETE /projects/{project}, GET /projects/{project}/members, PUT and
// DELETE /projects/{project}/members/{subject}), on project records in the store, for tests of
// clients (the CLI, the console) against an API built without them. Each is added only where
// the app has no such route of its own: an app that has them is tested with its own. The rules
// (domain/access.ts) still authorize every call, and the audit log records each.

import { PlatformError } from '../../src/core/errors.js';
import { PROJECT_ROLES, type ProjectRole } from '../../src/domain/access.js';
import type { ProjectRecord } from '../../src/domain/records.js';
import type { ControlApp } from '../../src/control/context.js';
import { callerPrincipal, roleIn } from '../../src/control/principal.js';
import { modify, type Store } from '../../src/store/store.js';

async function projectNamed(store: Store, name: string): Promise<ProjectRecord> {
  const found = (await store.list('project')).find((p) => p.value.name === name);
  if (!found) throw new PlatformError('not_found', `no project named ${name}`);
  return found.value;
}

const view = (p: ProjectRecord, role: ProjectRole | 'admin' | null) => ({ name: p.name, gpu_quota: p.gpu_quota, gpus_reserved: 0, role, created_at: p.created_at });

export function addProjectRoutesIfMissing(app: ControlApp, store: Store): void {
  const missing = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string) => !app.hasRoute({ method, url });

  if (missing('GET', '/projects')) {
    app.get('/projects', async (request) => {
      const principal = callerPrincipal(request);
      const all = (await store.list('project')).map((p) => p.value);
      const visible = principal.admin ? all : all.filter((p) => principal.roles.has(p.name));
      return { items: visible.map((p) => view(p, principal.admin ? 'admin' : roleIn(principal, p.name))) };
    });
  }
  if (missing('POST', '/projects')) {
    app.post('/projects', async (request, reply) => {
      const body = request.body as { name: string; gpu_quota?: number };
      const now = new Date().toISOString();
      const created = await store.create('project', (id) => ({ id, name: body.name, gpu_quota: body.gpu_quota ?? null, members: [], created_at: now, updated_at: now }), {
        unique: [{ index: 'project-name', key: body.name }],
      });
      return reply.status(201).send(view(created.value, 'admin'));
    });
  }
  if (missing('PATCH', '/projects/:project')) {
    app.patch('/projects/:project', async (request) => {
      const { project } = request.params as { project: string };
      const p = await projectNamed(store, project);
      const updated = await modify(store, 'project', p.id, (cur) => ({ ...cur, gpu_quota: (request.body as { gpu_quota: number | null }).gpu_quota }));
      return view(updated.value, 'admin');
    });
  }
  if (missing('DELETE', '/projects/:project')) {
    app.delete('/projects/:project', async (request, reply) => {
      const { project } = request.params as { project: string };
      if (project === 'default') throw new PlatformError('conflict', 'the default project is never deleted');
      await store.delete('project', (await projectNamed(store, project)).id);
      return reply.status(204).send(null);
    });
  }
  if (missing('GET', '/projects/:project/members')) {
    app.get('/projects/:project/members', async (request) => {
      const { project } = request.params as { project: string };
      return { items: (await projectNamed(store, project)).members };
    });
  }
  if (missing('PUT', '/projects/:project/members/:subject')) {
    app.put('/projects/:project/members/:subject', async (request) => {
      const { project, subject } = request.params as { project: string; subject: string };
      const role = (request.body as { role: ProjectRole }).role;
      if (!PROJECT_ROLES.includes(role)) throw new PlatformError('invalid_field', `role must be one of ${PROJECT_ROLES.join(', ')}`, { field: 'role' });
      const p = await projectNamed(store, project);
      await modify(store, 'project', p.id, (cur) => ({ ...cur, members: [...cur.members.filter((m) => m.subject !== subject), { subject, role }] }));
      return { subject, role };
    });
  }
  if (missing('DELETE', '/projects/:project/members/:subject')) {
    app.delete('/projects/:project/members/:subject', async (request, reply) => {
      const { project, subject } = request.params as { project: string; subject: string };
      const p = await projectNamed(store, project);
      if (!p.members.some((m) => m.subject === subject)) throw new PlatformError('not_found', `${subject} is not a member of ${project}`);
      await modify(store, 'project', p.id, (cur) => ({ ...cur, members: cur.members.filter((m) => m.subject !== subject) }));
      return reply.status(204).send(null);
    });
  }
}
