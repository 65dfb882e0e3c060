// Owns the client's program: the `infergate` subcommands that talk to the control API, built
// with commander — the deployment commands here (login, apply, ls, get, describe, logs, exec,
// wait, usage, …), the credential ones in credential-commands.ts. Each action resolves the
// connection, calls the API through ApiClient and prints through output.ts; failures are
// ClientErrors with their exit codes (errors.ts).

import { ACTION_WORDS, permissionsOf, type ProjectRole } from '../domain/access.js';
import { Command, Option } from 'commander';
import { ApiClient, type Json } from './api.js';
import { nodeRequest } from './http-request.js';
import { age } from './age.js';
import { decimal, integer, makeKit, readOptionFile, upTo, type ClientIo } from './command-kit.js';
import { COMPLETE_COMMAND, completionScript, completionWords } from './completion.js';
import { configPath, readContexts, resolveConnection, writeContexts } from './contexts.js';
import { addCredentialCommands, REGISTRY_CREDENTIALS } from './credential-commands.js';
import { addTeamCommands } from './team-commands.js';
import { callSnippets, snippetDeployment } from '../domain/call-snippets.js';
import {
  CHUNK_SIZE_MAX,
  componentsSummary,
  DEFAULT_CHUNK_SIZE,
  deploymentPage,
  environmentLines,
  FAMILIES,
  flowControlText,
  getDeployment,
  listDeployments,
  registryLine,
  routeOf,
  shortReason,
  type Deployment,
  type Family,
} from './deployments.js';
import { ApiRefusal, UsageError } from './errors.js';
import { eventLines, readEvents, type DeploymentEvent } from './events-text.js';
import { addExamples } from './help.js';
import { print, statusWord, type Column, type Out } from './output.js';
import { addTrafficCommands } from './traffic.js';
import { autoscalingLine, lastScaleLine, revisionShareText, rolloutLine, trafficLine } from './traffic-text.js';
import { usageText, type UsageView } from './usage-text.js';
import { AUTOSCALING_METRICS, type AutoscalingMetric } from '../domain/autoscaling-signal.js';

export type { ClientIo };

// Loaded by the commands that use them, so `ls`, `get` and the rest start without them: the
// apply planner (and yaml) and the watchers (logs, exec, wait; shell-quote and ws).
const applying = () => import('./apply.js');
const watching = () => import('./watch.js');

const DEFAULT_WAIT_S = 300;

const deploymentColumns = (out: Out): Column<Deployment>[] => [
  { header: 'NAME', value: (d) => d.name },
  { header: 'FAMILY', value: (d) => d.family },
  { header: 'STATUS', value: (d) => statusWord(d.status, out) },
  { header: 'COMPONENTS', value: (d) => componentsSummary(d) },
  { header: 'REVISION', value: (d) => (d.serving_revision !== null && d.serving_revision !== d.revision ? `${d.revision} (serving ${d.serving_revision})` : String(d.revision)) },
  { header: 'ENDPOINT', value: (d) => `https://${d.endpoint_url}` },
  { header: 'AGE', value: (d) => age(d.created_at) },
  // Last, so the columns before it stay one word each for awk; `describe` has it in full.
  { header: 'REASON', value: (d) => shortReason(d.status_reason) },
];

export function buildProgram(io: ClientIo): Command {
  const { out } = io;
  const program = new Command('infergate')
    .description('The infergate command line: run the service (serve), or manage deployments through its control API.')
    .addOption(new Option('--api <url>', 'control API URL (env INFERGATE_API; default: the saved login)'))
    .addOption(new Option('--key <key>', 'service-account key (env INFERGATE_KEY; default: the saved login)'))
    .addOption(new Option('--context <name>', 'saved login to use (default: the current one)'))
    .addOption(new Option('--project <name>', "project to act in (env INFERGATE_PROJECT; default: the context's, else your home project)"))
    .addOption(new Option('-o, --output <format>', 'table | json | yaml | name').default('table'))
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (s) => out.write(s), writeErr: (s) => void process.stderr.write(s) })
    .exitOverride();

  const kit = makeKit(io);
  const { globals, api, format, printData: printJson } = kit;
  const show = (cmd: Command, data: Deployment | Deployment[]) => print(data, format(cmd), out, deploymentColumns(out), (d) => d.name);
  const waitOption = () => new Option('--wait', 'wait until the deployment is ready (its current revision serving)');
  const timeoutOption = () => new Option('--timeout <seconds>', 'how long --wait waits').default(DEFAULT_WAIT_S).argParser(integer('--timeout'));
  const replaceSecretsOption = () => new Option('--replace-secrets', "send the file's secrets (tokens, passwords, secret_env) even where the deployment has them: they cannot be read back to compare");
  const warn = (lines: string[]) => lines.forEach((line) => process.stderr.write(`infergate: ${line}\n`));

  program
    .command('login')
    .description('save the control API URL and a service-account key (checked first) as a context; --sso signs a person in through the identity provider')
    .option('--key-file <file>', 'read the key from a file (default: standard input)')
    .option('--sso', 'sign in as a person through the identity provider (device authorization: open the link printed and confirm the code); the session renews itself with a refresh token kept in the context')
    .addHelpText('after', '\nThe global --api names the control API (required here) and --context the name to save it under (default: default).')
    .action(async (opts: { keyFile?: string; sso?: boolean }, cmd: Command) => {
      const flags = globals(cmd);
      if (!flags.api) throw new UsageError('login needs --api URL (the control API, e.g. http://127.0.0.1:8080)');
      const contextName = flags.context ?? 'default';
      const apiUrl = flags.api.replace(/\/+$/, '');
      const file = configPath(io.env);
      if (opts.sso) {
        if (opts.keyFile || flags.key) throw new UsageError('--sso signs a person in: leave out --key and --key-file');
        const { ssoLogin } = await import('./sso-login.js');
        const signed = await ssoLogin(apiUrl, io.request ?? nodeRequest, (line) => out.write(`${line}\n`), (ms) => new Promise((resolve) => setTimeout(resolve, ms)));
        const who = signed.user.email ?? `user ${signed.user.id}`;
        const saved = readContexts(file);
        saved.contexts[contextName] = { api: apiUrl, key: signed.session_token, refresh_token: signed.refresh_token, expires_at: signed.expires_at, user: who };
        saved.current = contextName;
        writeContexts(file, saved);
        out.write(`logged in to ${apiUrl} as ${who}; saved as context ${contextName} in ${file}\n`);
        return;
      }
      const raw = opts.keyFile ? readOptionFile('--key-file', opts.keyFile) : flags.key ?? io.readStdin();
      const key = raw.split('\n')[0]?.trim() ?? '';
      if (key === '') throw new UsageError('no key given: pass --key-file FILE or the key on standard input');
      const client = new ApiClient({ api: apiUrl, key, source: 'login' }, { request: io.request });
      const me = await client.get<{ name: string; role: string | null }>('/whoami');
      const saved = readContexts(file);
      saved.contexts[contextName] = { api: apiUrl, key };
      saved.current = contextName;
      writeContexts(file, saved);
      out.write(`logged in to ${apiUrl} as ${me.name} (${me.role ?? 'no role'}); saved as context ${contextName} in ${file}\n`);
    });

  program
    .command('whoami')
    .description('the service account the key belongs to')
    .action(async (_opts, cmd: Command) => {
      const me = await api(cmd).get<{ name: string; role: ProjectRole | 'admin' | null; admin?: boolean; id: number; project?: string }>('/whoami');
      const where = me.project ? ` in project ${me.project}` : '';
      printJson(cmd, me, () => {
        out.write(`${me.name} (${me.role ?? 'no role'})${where} at ${resolveConnection(globals(cmd), io.env).api}\n`);
        // What the role may do here, from the rule table the API enforces (domain/access.ts).
        const admin = me.admin === true || me.role === 'admin';
        const { may, mayNot } = permissionsOf(me.role === 'admin' ? null : me.role, admin);
        out.write(`may: ${may.map((a) => ACTION_WORDS[a]).join('; ') || 'nothing'}\n`);
        if (mayNot.length > 0) out.write(`may not: ${mayNot.map((a) => ACTION_WORDS[a]).join('; ')}\n`);
      });
    });

  program
    .command('apply')
    .description('create or update the deployments a file describes (YAML or JSON; `-` reads standard input)')
    .requiredOption('-f, --file <file>', 'deployments: the API create body plus `family: general|orchestrated`, matched by name')
    .option('--dry-run', 'print what would be done, change nothing')
    .addOption(replaceSecretsOption())
    .addOption(waitOption())
    .addOption(timeoutOption())
    .action(async (opts: { file: string; dryRun?: boolean; replaceSecrets?: boolean; wait?: boolean; timeout: number }, cmd: Command) => {
      const { describeStep, performStep, planApply, readDesired, withheldWarnings } = await applying();
      const client = api(cmd);
      const steps = await planApply(client, readDesired(opts.file, opts.file === '-' ? () => io.readStdin() : undefined), { replaceSecrets: opts.replaceSecrets });
      warn(withheldWarnings(steps, opts.file));
      if (opts.dryRun) {
        for (const step of steps) out.write(`${describeStep(step)}\n`);
        return;
      }
      const touched: string[] = [];
      for (const step of steps) {
        const { line } = await performStep(client, step);
        out.write(`${line}\n`);
        if (step.kind !== 'unchanged') touched.push(step.desired.name);
      }
      if (!opts.wait) return;
      const { waitFor } = await watching();
      for (const name of touched) await waitFor(client, name, { for: 'ready', timeoutMs: opts.timeout * 1000 }, out);
    });

  program
    .command('diff')
    .description('what `apply -f FILE` would change, field by field')
    .requiredOption('-f, --file <file>', 'the file apply would read')
    .addOption(replaceSecretsOption())
    .action(async (opts: { file: string; replaceSecrets?: boolean }, cmd: Command) => {
      const { describeChanges, describeStep, planApply, readDesired, withheldWarnings } = await applying();
      const steps = await planApply(api(cmd), readDesired(opts.file, opts.file === '-' ? () => io.readStdin() : undefined), { replaceSecrets: opts.replaceSecrets });
      warn(withheldWarnings(steps, opts.file));
      for (const step of steps) out.write([describeStep(step), ...describeChanges(step)].join('\n') + '\n');
    });

  program
    .command('create')
    .description('create the deployments a file describes; refused for one that exists (use apply)')
    .requiredOption('-f, --file <file>', 'deployments, as for apply')
    .addOption(waitOption())
    .addOption(timeoutOption())
    .action(async (opts: { file: string; wait?: boolean; timeout: number }, cmd: Command) => {
      const { performStep, planApply, readDesired } = await applying();
      const client = api(cmd);
      const steps = await planApply(client, readDesired(opts.file, opts.file === '-' ? () => io.readStdin() : undefined));
      const existing = steps.find((s) => s.kind !== 'create');
      if (existing) throw new UsageError(`${existing.desired.name} exists already; apply updates it`);
      for (const step of steps) out.write(`${(await performStep(client, step)).line}\n`);
      if (!opts.wait) return;
      const { waitFor } = await watching();
      for (const step of steps) await waitFor(client, step.desired.name, { for: 'ready', timeoutMs: opts.timeout * 1000 }, out);
    });

  program
    .command('ls')
    .alias('list')
    .description('deployments of both families, by name (every page of the API\'s lists); one page with --limit')
    .addOption(new Option('--family <family>', 'one family only').choices([...FAMILIES]))
    .addOption(
      new Option('--chunk-size <n>', `deployments per request while reading every page (1–${CHUNK_SIZE_MAX}; 0: one request per family, without a limit)`)
        .default(DEFAULT_CHUNK_SIZE)
        .argParser(upTo('--chunk-size', CHUNK_SIZE_MAX, 0)),
    )
    .addOption(new Option('--limit <n>', `one page of at most n deployments (1–${CHUNK_SIZE_MAX}) in the API's order (general, then orchestrated; oldest first); the token for the next page is printed on stderr (-o json/yaml: in the output)`).argParser(upTo('--limit', CHUNK_SIZE_MAX, 1)))
    .addOption(new Option('--continue <token>', 'the page after the one that printed this token (with --limit)'))
    .addHelpText('after', '\nWithout --limit, ls reads every page of both lists, --chunk-size deployments per request, and sorts them by name. With --limit it prints one page and, when more remain, the command for the next one.')
    .action(async (opts: { family?: Family; chunkSize: number; limit?: number; continue?: string }, cmd: Command) => {
      const client = api(cmd);
      if (opts.limit === undefined) {
        if (opts.continue !== undefined) throw new UsageError('--continue goes with --limit: it names the next page of that size');
        return show(cmd, await listDeployments(client, { chunkSize: opts.chunkSize, family: opts.family }));
      }
      const page = await deploymentPage(client, opts.limit, opts.continue, opts.family);
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(page, f, out, [], () => '');
      show(cmd, page.items);
      if (page.continue !== undefined) {
        const family = opts.family ? ` --family ${opts.family}` : '';
        process.stderr.write(`more deployments: infergate ls${family} --limit ${opts.limit} --continue ${page.continue}\n`);
      }
    });

  program
    .command('get <name>')
    .description('one deployment (-o json or yaml: every field the API returns)')
    .action(async (name: string, _opts, cmd: Command) => show(cmd, await getDeployment(api(cmd), name)));

  program
    .command('describe <name>')
    .description('a deployment in full: status and why, components, endpoint and how to call it, environment (secret variables by name only), revisions, events')
    .action(async (name: string, _opts, cmd: Command) => {
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const replicas = (await client.get<{ items: { name: string; component: string; state: string; restarts: number; revision: number }[] }>(`${routeOf(d)}/replicas`)).items;
      const f = format(cmd);
      const registry = f === 'json' || f === 'yaml' ? null : registryLine(d, await credentialName(client, d.registry_credential_id ?? null));
      const events = await readEvents(client, d);
      printJson(cmd, { ...d, replicas, events: events ?? [] }, () => out.write(describeText(d, replicas, registry, out, events, client.connection.api)));
    });

  program
    .command('delete <name>')
    .description('delete a deployment (its replicas drain, then stop)')
    .option('--wait', 'wait until it is gone')
    .addOption(timeoutOption())
    .action(async (name: string, opts: { wait?: boolean; timeout: number }, cmd: Command) => {
      const client = api(cmd);
      const d = await getDeployment(client, name);
      await client.call('DELETE', routeOf(d));
      out.write(`${name} deleted\n`);
      if (opts.wait) await (await watching()).waitFor(client, name, { for: 'deleted', timeoutMs: opts.timeout * 1000 }, out);
    });

  for (const action of ['pause', 'resume'] as const) {
    program
      .command(`${action} <name>`)
      .description(action === 'pause' ? 'stop every replica, keep the counts (the endpoint answers 503)' : 'start the replicas again with the counts from before the pause')
      .action(async (name: string, _opts, cmd: Command) => {
        const client = api(cmd);
        const d = await client.call<Deployment>('POST', `${routeOf(await getDeployment(client, name))}/${action}`);
        out.write(`${name} ${action === 'pause' ? 'paused' : 'resumed'} (${d.status})\n`);
      });
  }

  program
    .command('rollback <name>')
    .description('roll back to an earlier revision (default: the one before the current)')
    .option('--to <revision>', 'the revision to go back to', integer('--to'))
    .action(async (name: string, opts: { to?: number }, cmd: Command) => {
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const target = opts.to ?? d.revisions.filter((r) => r.revision < d.revision).at(-1)?.revision;
      if (target === undefined) throw new UsageError(`${name} has no revision before ${d.revision}`);
      const after = await client.call<Deployment>('POST', `${routeOf(d)}/rollback`, { revision: target });
      out.write(`${name}: revision ${after.revision} (the spec of revision ${target}) is rolling out\n`);
    });

  addTrafficCommands(program, kit);

  program
    .command('clone <name> <new-name>')
    .description('a new deployment with the same settings (a new endpoint token is needed: --token, or one bound from the vault with --token-id)')
    .option('--token <value>', 'endpoint bearer token of the new deployment')
    .option('--token-id <id>', 'a vault token to bind instead', integer('--token-id'))
    .action(async (name: string, newName: string, opts: { token?: string; tokenId?: number }, cmd: Command) => {
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const body: Json = { name: newName };
      if (opts.token !== undefined) body.endpoint_bearer_token = opts.token;
      if (opts.tokenId !== undefined) body.endpoint_token_id = opts.tokenId;
      const created = await client.call<Deployment>('POST', `${routeOf(d)}/clone`, body);
      out.write(`${created.name} created from ${name}: https://${created.endpoint_url}\n`);
    });

  program
    .command('scale <name>')
    .description('change replica bounds and the autoscaling signal: in place, no new revision')
    .option('--min <n>', 'min_replicas', integer('--min'))
    .option('--max <n>', 'max_replicas', integer('--max'))
    .addOption(new Option('--autoscaling-metric <metric>', 'the signal the autoscaler scales on (concurrency: in-flight requests per replica, its target max_concurrency/concurrency)').choices([...AUTOSCALING_METRICS]))
    .option('--autoscaling-target <n>', 'the target of queue_depth (waiting requests per replica), kv_cache (percent) or ttft (p90 ms)', decimal('--autoscaling-target'))
    .action(async (name: string, opts: { min?: number; max?: number; autoscalingMetric?: AutoscalingMetric; autoscalingTarget?: number }, cmd: Command) => {
      if (opts.min === undefined && opts.max === undefined && opts.autoscalingMetric === undefined && opts.autoscalingTarget === undefined) {
        throw new UsageError('give --min, --max, --autoscaling-metric or --autoscaling-target');
      }
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const patch: Json = {};
      if (opts.min !== undefined) patch.min_replicas = opts.min;
      if (opts.max !== undefined) patch.max_replicas = opts.max;
      if (opts.autoscalingMetric !== undefined) patch.autoscaling_metric = opts.autoscalingMetric;
      if (opts.autoscalingTarget !== undefined) patch.autoscaling_target = opts.autoscalingTarget;
      const after = await client.call<Deployment>('PATCH', routeOf(d), patch);
      const signal = autoscalingLine(after);
      out.write(`${name} scaled in place (min ${String(after.min_replicas)}, max ${String(after.max_replicas)}${signal !== null ? `; ${signal}` : ''}; revision ${after.revision})\n`);
    });

  program
    .command('revisions <name>')
    .description('the revision history')
    .action(async (name: string, _opts, cmd: Command) => {
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const revisions = (await client.get<{ items: Deployment['revisions'] }>(`${routeOf(d)}/revisions`)).items;
      const f = format(cmd);
      print(revisions, f, out, [
        { header: 'REVISION', value: (r) => `${r.revision}${r.revision === d.revision ? ' (current)' : ''}${r.revision === d.serving_revision ? ' (serving)' : ''}` },
        { header: 'STATUS', value: (r) => statusWord(r.status, out) },
        { header: 'PERCENT', value: (r) => (r.percent === undefined ? '-' : `${r.percent} %`) },
        { header: 'TAGS', value: (r) => (r.tags ?? []).join(', ') || '-' },
        { header: 'REASON', value: (r) => r.reason },
        { header: 'CREATED', value: (r) => r.created_at },
        { header: 'FAILURE', value: (r) => r.failure_reason ?? '' },
      ], (r) => String(r.revision));
    });

  program
    .command('logs <name>')
    .description('replica logs of the current revision (or --revision); -f follows new lines')
    .option('-f, --follow', 'keep printing lines as they are written')
    .option('--tail <n>', 'lines from before', integer('--tail'), 100)
    .option('--revision <n>', 'another revision', integer('--revision'))
    .option('--component <name>', 'Replica, or Frontend, Worker, Prefill, Decode')
    .option('--replica <name>', 'one replica, e.g. chat-r1-7')
    .action(async (name: string, opts: { follow?: boolean; tail: number; revision?: number; component?: string; replica?: string }, cmd: Command) => {
      const aborter = new AbortController();
      const stop = () => aborter.abort();
      process.once('SIGINT', stop);
      try {
        await (await watching()).printLogs(api(cmd), name, { follow: opts.follow === true, tail: opts.tail, revision: opts.revision, component: opts.component, replica: opts.replica, json: format(cmd) === 'json' }, out, aborter.signal);
      } finally {
        process.off('SIGINT', stop);
      }
    });

  program
    .command('exec <name> [command...]')
    .description('a shell in a ready replica: interactive when stdin is a terminal, else one command (after --) whose exit status is passed on')
    .option('--replica <name>', 'which replica (default: the first ready one)')
    .action(async (name: string, command: string[], opts: { replica?: string }, cmd: Command) => {
      io.setExitCode(await (await watching()).exec(api(cmd), name, { replica: opts.replica, command }));
    });

  program
    .command('wait <name>')
    .description('wait until a deployment is ready (its current revision serving) or deleted; exit 1 at once, with the reason, when it is failing (a replica keeps crashing) or failed')
    .addOption(new Option('--for <condition>', 'ready | deleted').choices(['ready', 'deleted']).default('ready'))
    .addOption(timeoutOption())
    .action(async (name: string, opts: { for: 'ready' | 'deleted'; timeout: number }, cmd: Command) => {
      await (await watching()).waitFor(api(cmd), name, { for: opts.for, timeoutMs: opts.timeout * 1000 }, out);
    });

  program
    .command('usage <name>')
    .description('requests, errors, tokens and GPU-seconds per hour and in total, and per revision when more than one served in the window')
    .option('--from <time>', 'ISO 8601; the hour containing it is the first')
    .option('--to <time>', 'ISO 8601; the hour containing it is the last')
    .action(async (name: string, opts: { from?: string; to?: string }, cmd: Command) => {
      const client = api(cmd);
      const d = await getDeployment(client, name);
      const query = new URLSearchParams();
      if (opts.from) query.set('from', opts.from);
      if (opts.to) query.set('to', opts.to);
      const usage = await client.get<UsageView>(`${routeOf(d)}/usage${query.size ? `?${query}` : ''}`);
      printJson(cmd, usage, () => out.write(usageText(usage, out)));
    });

  addCredentialCommands(program, kit);
  addTeamCommands(program, kit);

  program
    .command('clusters')
    .description('clusters, their hardware and free instances')
    .action(async (_opts, cmd: Command) => {
      const clusters = (await api(cmd).get<{ items: { id: number; name: string; hardware: { id: number; name: string; gpus_per_instance: number; instances: number; available?: number }[] }[] }>('/clusters')).items;
      const rows = clusters.flatMap((c) => c.hardware.map((h) => ({ cluster: `${c.id} ${c.name}`, ...h })));
      printJson(cmd, clusters, () =>
        print(rows, 'table', out, [
          { header: 'CLUSTER', value: (r) => r.cluster },
          { header: 'HARDWARE', value: (r) => `${r.id} ${r.name}` },
          { header: 'GPUS', value: (r) => String(r.gpus_per_instance) },
          { header: 'INSTANCES', value: (r) => String(r.instances) },
        ], (r) => r.name),
      );
    });

  program
    .command('presets')
    .description('the engine presets the create forms offer')
    .action(async (_opts, cmd: Command) => {
      const presets = (await api(cmd).get<{ items: { id: string; name: string; image: string; description: string }[] }>('/presets')).items;
      print(presets, format(cmd), out, [
        { header: 'ID', value: (p) => p.id },
        { header: 'NAME', value: (p) => p.name },
        { header: 'IMAGE', value: (p) => p.image },
      ], (p) => p.id);
    });

  program
    .command('completion <shell>')
    .description('a completion script for bash or zsh')
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh') throw new UsageError(`completion is for bash or zsh, not "${shell}"`);
      out.write(completionScript(program, shell));
    });

  program
    .command(`${COMPLETE_COMMAND} <kind> [prefix]`, { hidden: true })
    .description('words for the completion scripts, one a line: deployments (from the API, short timeout) or contexts; nothing when they cannot be had')
    .action(async (kind: string, prefix: string | undefined, _opts, cmd: Command) => {
      const words = await completionWords(kind, prefix ?? '', globals(cmd), io);
      out.write(words.map((w) => `${w}\n`).join(''));
    });

  addExamples(program);
  return program;
}

/** The name of a vault registry credential, or null when there is none or it cannot be read (describe then shows its id). */
async function credentialName(client: ApiClient, id: number | null): Promise<string | null> {
  if (id === null) return null;
  try {
    return (await client.get<{ name: string }>(`${REGISTRY_CREDENTIALS}/${id}`)).name;
  } catch (err) {
    if (err instanceof ApiRefusal) return null;
    throw err;
  }
}

/** The shell snippet (curl, or grpcurl for gRPC) of the console's Overview, indented; the SDK ones are there too. */
function callItLines(d: Deployment, apiUrl: string): string[] {
  const shell = callSnippets(snippetDeployment(d), { apiUrl })[0];
  const lines = shell ? shell.text.split('\n') : [];
  if (d.protocol !== 'grpc') lines.push("# The OpenAI SDKs (Python, JavaScript): the console's Overview tab");
  return lines.map((l) => `  ${l}`);
}

function describeText(
  d: Deployment,
  replicas: { name: string; component: string; state: string; restarts: number; revision: number }[],
  registry: string | null,
  out: Out,
  events: readonly DeploymentEvent[] | null,
  apiUrl: string,
): string {
  const lines = [
    `Name:        ${d.name} (${d.family}, id ${d.id})`,
    `Status:      ${statusWord(d.status, out)}${d.paused ? ' (paused)' : ''}`,
    ...(d.status_reason ? [`Reason:      ${d.status_reason}`] : []),
    `Revision:    ${d.revision}${d.serving_revision !== null && d.serving_revision !== d.revision ? ` (serving ${d.serving_revision})` : ''}${d.rollout ? `; rollout ${d.rollout.state}${d.rollout.reason ? `: ${d.rollout.reason}` : ''}` : ''}`,
    ...(trafficLine(d) !== null ? [`Traffic:     ${trafficLine(d)}`] : []),
    ...(rolloutLine(d) !== null ? [`Rollout:     ${rolloutLine(d)}`] : []),
    `Components:  ${componentsSummary(d)}`,
    ...(autoscalingLine(d) !== null ? [`Autoscaling: ${autoscalingLine(d)}`] : []),
    ...(lastScaleLine(events) !== null ? [`Last scale:  ${lastScaleLine(events)}`] : []),
    ...(registry ? [`Registry:    ${registry}`] : []),
    `Endpoint:    https://${d.endpoint_url}`,
    ...(flowControlText(d) !== null ? [`Queue:       ${flowControlText(d)}`] : []),
    '',
    'Call it:',
    ...callItLines(d, apiUrl),
    '',
    'Environment:',
    ...environmentLines(d),
    '',
    'Replicas:',
    ...(replicas.length === 0 ? ['  none'] : replicas.map((r) => `  ${r.name}  ${r.component}  revision ${r.revision}  ${r.state}${r.restarts > 0 ? `  restarts ${r.restarts}` : ''}`)),
    '',
    'Revisions:',
    ...d.revisions.map((r) => `  ${r.revision}  ${r.status}  ${r.reason}  ${r.created_at}${revisionShareText(r)}${r.failure_reason ? `  ${r.failure_reason}` : ''}`),
    '',
    ...eventLines(events),
  ];
  return lines.join('\n') + '\n';
}

