// Owns the client's commands for teams: `projects` (list; the admin creates, sets the GPU quota
// of and removes them), `members` of the current project (owners add, change and remove them),
// `context set-project` (the project a saved login acts in), and `audit` (the project's audit
// log for its owners, every project's for the admin). The current project is --project, else
// INFERGATE_PROJECT, else the context's, else the caller's home project (GET /whoami).

import { Option, type Command } from 'commander';
import { PROJECT_NAME_PATTERN, PROJECT_ROLES } from '../domain/access.js';
import type { ApiClient } from './api.js';
import { auditTable, timeFlag, type AuditEntry } from './audit-text.js';
import { integer, upTo, type Kit } from './command-kit.js';
import { configPath, readContexts, writeContexts } from './contexts.js';
import { UsageError } from './errors.js';
import { print } from './output.js';

interface ProjectView {
  name: string;
  gpu_quota: number | null;
  gpus_reserved: number;
  role: string | null;
  created_at: string;
}

interface MemberView {
  subject: string;
  role: string;
}

function projectName(raw: string): string {
  if (!PROJECT_NAME_PATTERN.test(raw)) throw new UsageError(`a project name is lowercase letters, digits and "-", starting with a letter, at most 40 characters: not "${raw}"`);
  return raw;
}

/** `alice@example.com` is read as `user:alice@example.com`; otherwise a subject names its kind (`user:` or `group:`). */
export function subjectOf(raw: string): string {
  if (/^(user|group):.+/.test(raw)) return raw;
  if (/^[^\s:@]+@[^\s:@]+$/.test(raw)) return `user:${raw}`;
  throw new UsageError(`a member is user:<e-mail address> or group:<group name>, not "${raw}"`);
}

/** The project a command acts in: the connection's, else the caller's home project as the API tells it. */
async function currentProject(client: ApiClient): Promise<string> {
  if (client.connection.project) return client.connection.project;
  const me = await client.get<{ project?: string }>('/whoami');
  return me.project ?? 'default';
}

export function addTeamCommands(program: Command, kit: Kit): void {
  const { api, format, out, io } = kit;

  const listProjects = async (cmd: Command) => {
    const items = (await api(cmd).get<{ items: ProjectView[] }>('/projects')).items;
    print(items, format(cmd), out, [
      { header: 'NAME', value: (p) => p.name },
      { header: 'ROLE', value: (p) => p.role ?? '-' },
      { header: 'GPU QUOTA', value: (p) => (p.gpu_quota === null ? 'cluster' : String(p.gpu_quota)) },
      { header: 'GPUS RESERVED', value: (p) => String(p.gpus_reserved) },
      { header: 'CREATED', value: (p) => p.created_at },
    ], (p) => p.name);
  };

  const projects = program.command('projects').description('the projects you are in (every project for the admin)').action(async (_opts, cmd: Command) => listProjects(cmd));
  projects.command('ls').description('the projects you are in, with your role (every project for the admin)').action(async (_opts, cmd: Command) => listProjects(cmd));
  projects
    .command('create <name>')
    .description('a project (admins only)')
    .addOption(new Option('--gpu-quota <gpus>', 'GPUs its deployments may reserve (default: only the cluster limits it)').argParser(integer('--gpu-quota')))
    .action(async (name: string, opts: { gpuQuota?: number }, cmd: Command) => {
      const p = await api(cmd).call<ProjectView>('POST', '/projects', { name: projectName(name), ...(opts.gpuQuota !== undefined ? { gpu_quota: opts.gpuQuota } : {}) });
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(p, f, out, [], () => '');
      out.write(`project ${p.name} created (GPU quota: ${p.gpu_quota ?? 'the cluster'})\n`);
    });
  projects
    .command('quota <name> <gpus>')
    .description('set the GPU quota of a project (admins only); "none": only the cluster limits it')
    .action(async (name: string, gpus: string, _opts, cmd: Command) => {
      const quota = gpus === 'none' ? null : integer('gpus')(gpus);
      const p = await api(cmd).call<ProjectView>('PATCH', `/projects/${projectName(name)}`, { gpu_quota: quota });
      out.write(`project ${p.name}: GPU quota ${p.gpu_quota ?? 'none (the cluster)'}\n`);
    });
  projects
    .command('rm <name>')
    .description('delete an empty project (admins only; never default)')
    .action(async (name: string, _opts, cmd: Command) => {
      await api(cmd).call('DELETE', `/projects/${projectName(name)}`);
      out.write(`project ${name} deleted\n`);
    });

  const members = program.command('members').description('members of the current project and their roles (owners manage them)');
  const listMembers = async (cmd: Command) => {
    const client = api(cmd);
    const project = await currentProject(client);
    const items = (await client.get<{ items: MemberView[] }>(`/projects/${project}/members`)).items;
    print(items, format(cmd), out, [
      { header: 'SUBJECT', value: (m) => m.subject },
      { header: 'ROLE', value: (m) => m.role },
    ], (m) => m.subject);
  };
  members.action(async (_opts, cmd: Command) => listMembers(cmd));
  members.command('ls').description('members of the current project').action(async (_opts, cmd: Command) => listMembers(cmd));
  members
    .command('add <subject>')
    .description('add a member (user:<e-mail> or group:<name>) or change their role (owners)')
    .addOption(new Option('--role <role>', PROJECT_ROLES.join(' | ')).choices([...PROJECT_ROLES]).makeOptionMandatory())
    .action(async (raw: string, opts: { role: string }, cmd: Command) => {
      const client = api(cmd);
      const project = await currentProject(client);
      const subject = subjectOf(raw);
      const m = await client.call<MemberView>('PUT', `/projects/${project}/members/${encodeURIComponent(subject)}`, { role: opts.role });
      out.write(`${m.subject} is ${m.role} of ${project}\n`);
    });
  members
    .command('rm <subject>')
    .description('remove a member (owners); they lose access on their next request')
    .action(async (raw: string, _opts, cmd: Command) => {
      const client = api(cmd);
      const project = await currentProject(client);
      const subject = subjectOf(raw);
      await client.call('DELETE', `/projects/${project}/members/${encodeURIComponent(subject)}`);
      out.write(`${subject} removed from ${project}\n`);
    });

  const context = program.command('context').description('saved logins');
  context
    .command('set-project [project]')
    .description('the project the current (or --context) login acts in; left out: the home project again')
    .action((project: string | undefined, _opts, cmd: Command) => {
      const file = configPath(io.env);
      const saved = readContexts(file);
      const name = kit.globals(cmd).context ?? saved.current;
      const ctx = name !== null ? saved.contexts[name] : undefined;
      if (name === null || !ctx) throw new UsageError(`no context${name ? ` "${name}"` : ''} in ${file} to set a project in (infergate login first)`);
      if (project === undefined) delete ctx.project;
      else ctx.project = projectName(project);
      writeContexts(file, saved);
      out.write(project === undefined ? `context ${name} acts in its home project\n` : `context ${name} acts in project ${project}\n`);
    });

  program
    .command('audit')
    .description("the audit log, newest first: every change and every refusal (owners: their project's; the admin: every project's, or --project's)")
    .option('--actor <name>', 'only calls of this service account or person')
    .option('--action <action>', 'only this action (token.manage, deployment.manage, …)')
    .addOption(new Option('--result <result>', 'only allowed, refused or failed calls').choices(['allowed', 'refused', 'failed']))
    .option('--since <time>', 'entries from this time on: a time ago (30m, 2h, 7d) or an ISO time')
    .option('--until <time>', 'entries up to this time: a time ago or an ISO time')
    .option('-A, --all-projects', "every project's entries (the admin), whatever the current project")
    .addOption(new Option('--limit <n>', 'at most this many entries (1–500; default 100)').argParser(upTo('--limit', 500, 1)))
    .option('--continue <token>', 'the next entries after a previous --limit')
    .action(async (opts: { actor?: string; action?: string; result?: string; since?: string; until?: string; allProjects?: boolean; limit?: number; continue?: string }, cmd: Command) => {
      const client = api(cmd);
      const query = new URLSearchParams();
      if (client.connection.project && !opts.allProjects) query.set('project', client.connection.project);
      if (opts.actor) query.set('actor', opts.actor);
      if (opts.action) query.set('action', opts.action);
      if (opts.result) query.set('result', opts.result);
      if (opts.since) query.set('since', timeFlag('--since', opts.since));
      if (opts.until) query.set('until', timeFlag('--until', opts.until));
      if (opts.limit !== undefined) query.set('limit', String(opts.limit));
      if (opts.continue) query.set('continue', opts.continue);
      const page = await client.get<{ items: AuditEntry[]; continue?: string; remaining_item_count?: number }>(`/audit${query.size ? `?${query}` : ''}`);
      kit.printData(cmd, page, () => out.write(auditTable(page.items, out)));
      if (page.continue && format(cmd) === 'table') process.stderr.write(`infergate: ${page.remaining_item_count ?? 'more'} more; the next entries: --continue ${page.continue}\n`);
    });
}
