// Owns the client's commands for the resources around deployments: endpoint tokens in the
// vault, client certificates, and service accounts. A value shown once by the API (a token, a
// key) is printed once, with a line saying so.

import { Option, type Command } from 'commander';
import type { Json } from './api.js';
import { integer, type Kit } from './command-kit.js';
import { print } from './output.js';

export function addCredentialCommands(program: Command, kit: Kit): void {
  const { out, api, format } = kit;
  const tokens = program.command('tokens').description('endpoint tokens kept in the vault');
  tokens
    .command('create <name>')
    .description('make a token; its value is printed once')
    .action(async (name: string, _opts, cmd: Command) => {
      const t = await api(cmd).call<{ id: number; name: string; token: string }>('POST', '/vault/tokens', { name });
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(t, f, out, [], () => '');
      out.write(`token ${t.name} (id ${t.id}); its value, shown once:\n${t.token}\n`);
    });
  tokens
    .command('ls')
    .description('tokens and the deployments bound to them')
    .action(async (_opts, cmd: Command) => {
      const items = (await api(cmd).get<{ items: { id: number; name: string; hint: string; deployments: number[]; created_at: string }[] }>('/vault/tokens')).items;
      print(items, format(cmd), out, [
        { header: 'ID', value: (t) => String(t.id) },
        { header: 'NAME', value: (t) => t.name },
        { header: 'HINT', value: (t) => t.hint },
        { header: 'DEPLOYMENTS', value: (t) => t.deployments.join(', ') || '-' },
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

  const certs = program.command('certs').description('client certificates for mTLS endpoints');
  certs
    .command('create <name>')
    .description('issue a client certificate (and its key) from the platform CA')
    .option('--deployment <id>', 'the deployment it is for (informational)', integer('--deployment'))
    .action(async (name: string, opts: { deployment?: number }, cmd: Command) => {
      const c = await api(cmd).call<Json & { id: number; fingerprint_sha256: string }>('POST', '/certificates', { name, deployment_id: opts.deployment ?? null });
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(c, f, out, [], () => '');
      out.write(`certificate ${name} (id ${c.id}, sha256 ${c.fingerprint_sha256}); get it with: infergate certs pem ${c.id} > ${name}.pem\n`);
    });
  certs
    .command('ls')
    .description('client certificates')
    .action(async (_opts, cmd: Command) => {
      const items = (await api(cmd).get<{ items: { id: number; name: string; not_after: string; revoked: boolean; deployments: number[] }[] }>('/certificates')).items;
      print(items, format(cmd), out, [
        { header: 'ID', value: (c) => String(c.id) },
        { header: 'NAME', value: (c) => c.name },
        { header: 'EXPIRES', value: (c) => c.not_after },
        { header: 'REVOKED', value: (c) => (c.revoked ? 'yes' : 'no') },
        { header: 'DEPLOYMENTS', value: (c) => c.deployments.join(', ') || '-' },
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

  const accounts = program.command('service-accounts').description('platform credentials (admins only)');
  accounts
    .command('create <name>')
    .description('a service account; its key is printed once')
    .addOption(new Option('--role <role>', 'admin | member').choices(['admin', 'member']).default('member'))
    .action(async (name: string, opts: { role: string }, cmd: Command) => {
      const a = await api(cmd).call<{ id: number; name: string; role: string; key: string }>('POST', '/service-accounts', { name, role: opts.role });
      const f = format(cmd);
      if (f === 'json' || f === 'yaml') return print(a, f, out, [], () => '');
      out.write(`service account ${a.name} (${a.role}, id ${a.id}); its key, shown once:\n${a.key}\n`);
    });
  accounts
    .command('ls')
    .description('service accounts')
    .action(async (_opts, cmd: Command) => {
      const items = (await api(cmd).get<{ items: { id: number; name: string; role: string; created_at: string }[] }>('/service-accounts')).items;
      print(items, format(cmd), out, [
        { header: 'ID', value: (a) => String(a.id) },
        { header: 'NAME', value: (a) => a.name },
        { header: 'ROLE', value: (a) => a.role },
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
