// Owns the client's commands for the resources around deployments: endpoint tokens and
// registry credentials in the vault, client certificates, and service accounts. A value shown
// once by the API (a token, a key) is printed once, with a line saying so. A secret the client
// sends (a registry password) is read from standard input or a file, never from the command
// line, where `ps` and the shell's history would show it; no part of a secret is ever shown (a
// credential is told by its name, username, registry and creation time). A registry credential
// is bound to the one registry host its password is sent to (--registry; `bind` for an admin). Tables name the deployments a token,
// certificate or registry credential serves; JSON and YAML keep the API's ids. Tokens and
// certificates carry a cap on the X-Priority class of their requests (--max-priority), set at
// creation and changed with `update`; tables show it as MAX PRIORITY ("any" for none).

import { PROJECT_ROLES } from '../domain/access.js';
import type { RegistryCredentialView } from '../domain/api-views.js';
import { Option, type Command } from 'commander';
import { PRIORITIES, type Priority } from '../domain/priority.js';
import { DEFAULT_CLIENT_KEY_TYPE, KEY_TYPES, type KeyType } from '../domain/client-certificates.js';
import type { ApiClient, Json } from './api.js';
import { integer, readOptionFile, type Kit } from './command-kit.js';
import { deploymentNames, listAll, namesById } from './deployments.js';
import { ApiRefusal, UsageError } from './errors.js';
import { print, type Column, type Format } from './output.js';

/** A registry credential as the API renders it: never the password nor any part of it; registry: the host it is sent to; deployments: those pulling with it. */
export type RegistryCredential = RegistryCredentialView;

export const REGISTRY_CREDENTIALS = '/vault/registry-credentials';

/** How a table shows a credential bound to no host (an older one): not used until an admin binds it. */
const UNBOUND = 'none: not used until an admin binds it';

const registryColumns = (names: ReadonlyMap<number, string>): Column<RegistryCredential>[] => [
  { header: 'ID', value: (c) => String(c.id) },
  { header: 'NAME', value: (c) => c.name },
  { header: 'USERNAME', value: (c) => c.username },
  { header: 'REGISTRY', value: (c) => c.registry ?? UNBOUND },
  { header: 'DEPLOYMENTS', value: (c) => deploymentNames(c.deployments, names) },
  { header: 'CREATED', value: (c) => c.created_at },
];

/**
 * Deployment names by id for a table's DEPLOYMENTS column; none are fetched for json, yaml or
 * name. Lists that cannot be read leave the column with ids rather than failing the command.
 */
async function namesFor(client: ApiClient, format: Format): Promise<ReadonlyMap<number, string>> {
  if (format !== 'table') return new Map();
  try {
    return await namesById(client);
  } catch (err) {
    if (err instanceof ApiRefusal) return new Map();
    throw err;
  }
}

/** A registry credential by id or name: digits are an id first, then a name (names may be digits too). */
export async function findRegistryCredential(client: ApiClient, ref: string): Promise<RegistryCredential> {
  const items = await listAll<RegistryCredential>(client, REGISTRY_CREDENTIALS);
  const found = (/^\d+$/.test(ref) ? items.find((c) => c.id === Number(ref)) : undefined) ?? items.find((c) => c.name === ref);
  if (!found) throw new ApiRefusal(404, 'not_found', `no registry credential with the id or name ${ref} (infergate registry-credentials ls lists them)`, null);
  return found;
}

/**
 * The password as `docker login --password-stdin` reads it: the text's line ending dropped,
 * anything else kept (spaces may be part of it); empty or several lines is refused.
 */
export function passwordFrom(text: string, where: string): string {
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new UsageError(`no password on ${where}`);
  if (/[\r\n]/.test(password)) throw new UsageError(`the password on ${where} is more than one line`);
  return password;
}

const CAP_HELP = `the highest X-Priority class its requests get (${PRIORITIES.join(' | ')}); a request asking for more is demoted to it`;

/** --max-priority at creation: a class, or left out for no cap. */
const capOption = () => new Option('--max-priority <class>', `${CAP_HELP}; default: no cap`).choices([...PRIORITIES]);

/** --max-priority of `update`: a class, or none to remove the cap. */
const newCapOption = () => new Option('--max-priority <class>', `${CAP_HELP}; none removes the cap`).choices([...PRIORITIES, 'none']).makeOptionMandatory();

const capOf = (value: string): Priority | null => (value === 'none' ? null : (value as Priority));

/** The MAX PRIORITY column: the class, or "any" when the credential has no cap. */
const capColumn = <T extends { max_priority?: Priority | null }>(): Column<T> => ({ header: 'MAX PRIORITY', value: (x) => x.max_priority ?? 'any' });

export function addCredentialCommands(program: Command, kit: Kit): void {
  const { out, api, format } = kit;
  const tokens = program.command('tokens').description('endpoint tokens kept in the vault');
  tokens
    .command('create <name>')
    .description('make a token; its value is printed once')
    .addOption(capOption())
    .action(async (name: string, opts: { maxPriority?: Priority }, cmd: Command) => {
      const body = { name, ...(opts.maxPriority ? { max_priority: opts.maxPriority } : {}) };
      const t = await api(cmd).call<{ id: number; name: string; token: string; max_priority?: Priority | null }>('POST', '/vault/tokens', body);
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(t, f, out, [], () => '');
      const cap = t.max_priority ? `, requests capped at ${t.max_priority}` : '';
      out.write(`token ${t.name} (id ${t.id}${cap}); its value, shown once:\n${t.token}\n`);
    });
  tokens
    .command('ls')
    .description('tokens and the deployments they protect (by name)')
    .action(async (_opts, cmd: Command) => {
      const client = api(cmd);
      const f = format(cmd);
      type Token = { id: number; name: string; max_priority?: Priority | null; deployments: number[]; created_at: string };
      const [tokenList, names] = await Promise.all([listAll<Token>(client, '/vault/tokens'), namesFor(client, f)]);
      print(tokenList, f, out, [
        { header: 'ID', value: (t) => String(t.id) },
        { header: 'NAME', value: (t) => t.name },
        capColumn<Token>(),
        { header: 'DEPLOYMENTS', value: (t) => deploymentNames(t.deployments, names) },
        { header: 'CREATED', value: (t) => t.created_at },
      ], (t) => t.name);
    });
  tokens
    .command('rm <id>')
    .description('delete a token (endpoints bound to it stop accepting it at once)')
    .action(async (id: string, _opts, cmd: Command) => {
      await api(cmd).call('DELETE', `/vault/tokens/${integer('id')(id)}`);
      out.write(`token ${id} deleted\n`);
    });
  tokens
    .command('update <id>')
    .description("change a token's cap on X-Priority; gateways apply it within a second")
    .addOption(newCapOption())
    .action(async (id: string, opts: { maxPriority: string }, cmd: Command) => {
      const t = await api(cmd).call<{ id: number; name: string; max_priority: Priority | null }>('PATCH', `/vault/tokens/${integer('id')(id)}`, { max_priority: capOf(opts.maxPriority) });
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(t, f, out, [], () => '');
      out.write(`token ${t.name} (id ${t.id}): ${t.max_priority ? `requests capped at ${t.max_priority}` : 'no cap'}\n`);
    });

  const registry = program.command('registry-credentials').description('image registry usernames and passwords kept in the vault, for deployments to pull with (registry_credential_id)');
  registry
    .command('create <name>')
    .description('keep a registry username and password in the vault; the password is read from standard input or a file, never the command line')
    .requiredOption('--username <user>', 'the registry user')
    .requiredOption('--registry <host[:port]>', 'the registry host the password is sent to, and the only one (docker.io for Docker Hub); deployments use it only for images pulled from there')
    .option('--password-stdin', 'read the password from standard input (as docker login does)')
    .option('--password-file <file>', 'read the password from a file')
    .action(async (name: string, opts: { username: string; registry: string; passwordStdin?: boolean; passwordFile?: string }, cmd: Command) => {
      if (opts.passwordStdin && opts.passwordFile !== undefined) throw new UsageError('give --password-stdin or --password-file, not both');
      let password: string;
      if (opts.passwordFile !== undefined) password = passwordFrom(readOptionFile('--password-file', opts.passwordFile), opts.passwordFile);
      else if (opts.passwordStdin) password = passwordFrom(kit.io.readStdin(), 'standard input');
      else throw new UsageError('no password: pipe it in with --password-stdin or name a file with --password-file FILE (never on the command line, where ps shows it)');
      const c = await api(cmd).call<RegistryCredential>('POST', REGISTRY_CREDENTIALS, { name, username: opts.username, password, registry: opts.registry });
      const f = format(cmd);
      if (f !== 'table') return print(c, f, out, registryColumns(new Map()), (x) => x.name);
      out.write(`registry credential ${c.name} (id ${c.id}) for user ${c.username} at ${c.registry ?? 'no registry'}; deployments pulling from there use it with registry_credential_id: ${c.id}\n`);
    });
  registry
    .command('bind <id-or-name> <registry>')
    .description("bind a registry credential to the registry host its password is sent to (admins only): an older credential bound to none is not used until then")
    .action(async (ref: string, host: string, _opts, cmd: Command) => {
      const client = api(cmd);
      const found = await findRegistryCredential(client, ref);
      const c = await client.call<RegistryCredential>('PATCH', `${REGISTRY_CREDENTIALS}/${found.id}`, { registry: host });
      const f = format(cmd);
      if (f !== 'table') return print(c, f, out, registryColumns(new Map()), (x) => x.name);
      out.write(`registry credential ${c.name} (id ${c.id}) is bound to ${c.registry ?? host}: its password is sent there only\n`);
    });
  registry
    .command('ls')
    .description('registry credentials and the deployments that pull with them')
    .action(async (_opts, cmd: Command) => {
      const client = api(cmd);
      const f = format(cmd);
      const [list, names] = await Promise.all([listAll<RegistryCredential>(client, REGISTRY_CREDENTIALS), namesFor(client, f)]);
      print(list, f, out, registryColumns(names), (c) => c.name);
    });
  registry
    .command('get <id-or-name>')
    .description('one registry credential (never its password)')
    .action(async (ref: string, _opts, cmd: Command) => {
      const client = api(cmd);
      const f = format(cmd);
      const [found, names] = await Promise.all([findRegistryCredential(client, ref), namesFor(client, f)]);
      print(found, f, out, registryColumns(names), (c) => c.name);
    });
  registry
    .command('rm <id-or-name>')
    .description('delete a registry credential; refused while a deployment pulls with it')
    .action(async (ref: string, _opts, cmd: Command) => {
      const client = api(cmd);
      const c = await findRegistryCredential(client, ref);
      await client.call('DELETE', `${REGISTRY_CREDENTIALS}/${c.id}`);
      out.write(`registry credential ${c.name} (id ${c.id}) deleted\n`);
    });

  const certs = program.command('certs').description('client certificates for mTLS endpoints');
  certs
    .command('create <name>')
    .description('issue a client certificate (and its key) from the platform CA')
    .option('--deployment <id>', 'the deployment it is for: one that takes client certificates accepts it besides its own', integer('--deployment'))
    .addOption(capOption())
    .addOption(new Option('--key-type <type>', 'the private key: ecdsa-p256, or rsa-2048 for a client that cannot use an EC key').choices([...KEY_TYPES]).default(DEFAULT_CLIENT_KEY_TYPE))
    .action(async (name: string, opts: { deployment?: number; maxPriority?: Priority; keyType: KeyType }, cmd: Command) => {
      const body = { name, deployment_id: opts.deployment ?? null, ...(opts.maxPriority ? { max_priority: opts.maxPriority } : {}), ...(opts.keyType !== DEFAULT_CLIENT_KEY_TYPE ? { key_type: opts.keyType } : {}) };
      const c = await api(cmd).call<Json & { id: number; fingerprint_sha256: string; key_type?: KeyType }>('POST', '/certificates', body);
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(c, f, out, [], () => '');
      const key = c.key_type ? `${c.key_type} key, ` : '';
      out.write(`certificate ${name} (id ${c.id}, ${key}sha256 ${c.fingerprint_sha256}); get it with: infergate certs pem ${c.id} > ${name}.pem\n`);
    });
  certs
    .command('ls')
    .description('client certificates and the deployments that accept them (by name)')
    .action(async (_opts, cmd: Command) => {
      const client = api(cmd);
      const f = format(cmd);
      type Cert = { id: number; name: string; not_after: string; revoked: boolean; max_priority?: Priority | null; deployments: number[] };
      const [certList, names] = await Promise.all([listAll<Cert>(client, '/certificates'), namesFor(client, f)]);
      print(certList, f, out, [
        { header: 'ID', value: (c) => String(c.id) },
        { header: 'NAME', value: (c) => c.name },
        { header: 'EXPIRES', value: (c) => c.not_after },
        { header: 'REVOKED', value: (c) => (c.revoked ? 'yes' : 'no') },
        capColumn<Cert>(),
        { header: 'DEPLOYMENTS', value: (c) => deploymentNames(c.deployments, names) },
      ], (c) => c.name);
    });
  certs
    .command('pem <id>')
    .description('the certificate and its private key in one .pem, on standard output')
    .action(async (id: string, _opts, cmd: Command) => {
      const client = api(cmd);
      const c = await client.get<{ pem_path: string }>(`/certificates/${integer('id')(id)}`);
      out.write(await client.text(c.pem_path));
    });
  certs
    .command('revoke <id>')
    .description('revoke a certificate (endpoints refuse it at once)')
    .action(async (id: string, _opts, cmd: Command) => {
      await api(cmd).call('POST', `/certificates/${integer('id')(id)}/revoke`);
      out.write(`certificate ${id} revoked\n`);
    });
  certs
    .command('update <id>')
    .description("change a certificate's cap on X-Priority; gateways apply it within a second")
    .addOption(newCapOption())
    .action(async (id: string, opts: { maxPriority: string }, cmd: Command) => {
      const c = await api(cmd).call<{ id: number; name: string; max_priority: Priority | null }>('PATCH', `/certificates/${integer('id')(id)}`, { max_priority: capOf(opts.maxPriority) });
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(c, f, out, [], () => '');
      out.write(`certificate ${c.name} (id ${c.id}): ${c.max_priority ? `requests capped at ${c.max_priority}` : 'no cap'}\n`);
    });

  const accounts = program.command('service-accounts').description("the project's platform credentials for automation (owners manage them; admin accounts: the admin)");
  accounts
    .command('create <name>')
    .description('a service account of the project (--project) with a role; its key is printed once')
    .addOption(
      new Option('--role <role>', 'its role in the project; admin: a platform admin account, made by the admin')
        .choices([...PROJECT_ROLES, 'admin'])
        .default('developer'),
    )
    .action(async (name: string, opts: { role: string }, cmd: Command) => {
      const a = await api(cmd).call<{ id: number; name: string; role: string; project: string | null; key: string }>('POST', '/service-accounts', { name, role: opts.role });
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(a, f, out, [], () => '');
      const where = a.project === null ? 'platform admin' : `${a.role} of ${a.project}`;
      out.write(`service account ${a.name} (${where}, id ${a.id}); its key, shown once:\n${a.key}\n`);
    });
  accounts
    .command('ls')
    .description('service accounts')
    .action(async (_opts, cmd: Command) => {
      const items = await listAll<{ id: number; name: string; role: string; project: string | null; created_at: string }>(api(cmd), '/service-accounts');
      print(items, format(cmd), out, [
        { header: 'ID', value: (a) => String(a.id) },
        { header: 'NAME', value: (a) => a.name },
        { header: 'ROLE', value: (a) => a.role },
        { header: 'PROJECT', value: (a) => a.project ?? '(platform)' },
        { header: 'CREATED', value: (a) => a.created_at },
      ], (a) => a.name);
    });
  accounts
    .command('rm <id>')
    .description('delete a service account (its key stops working at once)')
    .action(async (id: string, _opts, cmd: Command) => {
      await api(cmd).call('DELETE', `/service-accounts/${integer('id')(id)}`);
      out.write(`service account ${id} deleted\n`);
    });
}
