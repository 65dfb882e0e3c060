// Holds the console's field checks (console/src/forms/rules.ts) and the control API to the same
// rules: one table of request bodies, each differing from a valid one in a single field, goes
// through both, and for that field both must give the same verdict in the same words. The rules
// live once, in src/domain/validation/field-rules.ts; this catches a side that stops using them.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkGeneral, checkOrchestrated, registryMoveProblems, type GeneralBody, type OrchestratedBody, type Problems } from '../console/src/forms/rules.js';
import { startControl, type TestControl } from './helpers/control.js';
import { generalBody } from './helpers/spec-fixtures.js';

const TOKEN = 'agree-token-0123456789';

type Row =
  | { family: 'general'; field: string; body: Partial<GeneralBody>; ok: boolean }
  | { family: 'orchestrated'; field: string; body: Partial<OrchestratedBody>; ok: boolean };

const general = (field: string, body: Partial<GeneralBody>, ok: boolean): Row => ({ family: 'general', field, body, ok });
const orchestrated = (field: string, body: Partial<OrchestratedBody>, ok: boolean): Row => ({ family: 'orchestrated', field, body, ok });
const flow = (max_queue: number, sheddable: number) => ({ max_queue, max_wait_seconds: { critical: 60, standard: 30, sheddable } });

const ROWS: Row[] = [
  general('name', { name: 'agree-name-ok' }, true),
  general('name', { name: 'a'.repeat(20) }, true),
  general('name', { name: 'a'.repeat(21) }, false),
  general('name', { name: 'Upper' }, false),
  general('name', { name: '1abc' }, false),
  general('name', { name: 'abc-' }, false),
  general('cooldown_period', { cooldown_period: 0 }, true),
  general('cooldown_period', { cooldown_period: 3600 }, true),
  general('cooldown_period', { cooldown_period: 3601 }, false),
  general('cooldown_period', { cooldown_period: -1 }, false),
  general('tag', { tag: 'v1.2_rc-3' }, true),
  general('tag', { tag: '-bad' }, false),
  general('tag', { tag: 'a'.repeat(129) }, false),
  general('image', { image: 'registry.example.com/team/engine:1.0' }, false),
  general('image', { image: 'has space' }, false),
  general('container_port', { container_port: 70_000 }, false),
  general('health_check_path', { health_check_path: 'health' }, false),
  general('metrics_path', { metrics_port: 9100 }, false),
  general('metrics_path', { metrics_port: 9100, metrics_path: 'metrics' }, false),
  general('config_file.filename', { config_file: { filename: 'a/b', mount_path: '/etc/x', content: '' } }, false),
  general('config_file.mount_path', { config_file: { filename: 'a.yaml', mount_path: '/etc/../x', content: '' } }, false),
  general('registry_password', { registry_username: 'me' }, false),
  general('endpoint_bearer_token', { endpoint_bearer_token: 'abc.def~ghi+/==' }, true),
  general('endpoint_bearer_token', { endpoint_bearer_token: 'short' }, false),
  general('endpoint_bearer_token', { endpoint_bearer_token: 'has spaces in it' }, false),
  general('endpoint_bearer_token', { endpoint_bearer_token: 'x'.repeat(513) }, false),
  general('env.GOOD_NAME', { env: { GOOD_NAME: 'v' } }, true),
  general('env.1BAD', { env: { '1BAD': 'v' } }, false),
  general('env.BAD-NAME', { env: { 'BAD-NAME': 'v' } }, false),
  general('env.INFERGATE_ID', { env: { INFERGATE_ID: 'v' } }, false),
  general('secret_env.2X', { secret_env: { '2X': 's' } }, false),
  general('secret_env.DUP', { env: { DUP: 'a' }, secret_env: { DUP: 'b' } }, false),
  general('annotations.example.com/team', { annotations: { 'example.com/team': 'a' } }, true),
  general('annotations.-bad', { annotations: { '-bad': 'a' } }, false),
  general('annotations.Example.com/x', { annotations: { 'Example.com/x': 'a' } }, false),
  general('min_replicas', { min_replicas: -1 }, false),
  general('max_replicas', { min_replicas: 2, max_replicas: 1 }, false),
  general('max_concurrency', { max_replicas: 3, max_concurrency: undefined }, false),
  general('max_concurrency', { max_replicas: 3, max_concurrency: 0 }, false),
  general('max_request_body_bytes', { max_request_body_bytes: 1024 }, true),
  general('max_request_body_bytes', { max_request_body_bytes: 1023 }, false),
  general('max_request_body_bytes', { max_request_body_bytes: 64 * 1024 ** 3 + 1 }, false),
  general('first_response_timeout_seconds', { first_response_timeout_seconds: 86_400 }, true),
  general('first_response_timeout_seconds', { first_response_timeout_seconds: 0 }, false),
  general('rate_limit.requests_per_second', { rate_limit: { requests_per_second: 0.5 } }, true),
  general('rate_limit.requests_per_second', { rate_limit: { requests_per_second: 0 } }, false),
  general('rate_limit.tokens_per_minute', { rate_limit: { tokens_per_minute: 0 } }, false),
  general('flow_control.max_queue', { flow_control: flow(100_001, 5) }, false),
  general('flow_control.max_wait_seconds.sheddable', { flow_control: flow(10, 3601) }, false),
  orchestrated('model', { model: 'org/model-1.5' }, true),
  orchestrated('model', { model: 'no-slash' }, false),
  orchestrated('model', { model: 'org/m/extra' }, false),
  orchestrated('min_replicas', { min_replicas: 0 }, false),
  orchestrated('served_model_name', { served_model_name: '' }, false),
  orchestrated('served_model_name', { served_model_name: 'llama' }, true),
  orchestrated('hardware_instance_id', { hardware_instance_id: undefined }, false),
  general('hardware_instance_id', { hardware_instance_id: undefined }, false),
  orchestrated('env.LD_PRELOAD', { env: { LD_PRELOAD: '/x.so' } }, false),
  orchestrated('cooldown_period', { cooldown_period: 4000 }, false),
];

let api: TestControl;

beforeAll(async () => {
  api = await startControl({ gpuQuota: 1_000_000 });
});
afterAll(async () => api?.close());

/** The first problem the API reports for `field`, with the whole answer for a failure message. */
async function serverVerdict(family: Row['family'], body: Record<string, unknown>, field: string): Promise<{ status: number; message: string | undefined; all: unknown }> {
  const res = await api.call('POST', `/deployments/${family}`, body);
  if (res.status === 201) {
    // Instances are finite: give this one's back before the next row.
    expect((await api.call('DELETE', `/deployments/${family}/${res.body.id}`)).status).toBe(202);
    return { status: 201, message: undefined, all: res.body };
  }
  // One problem travels as the error itself; more than one also in `details`, the first first.
  const error: { field?: string; message: string; details?: Array<{ field: string; message: string }> } | undefined = res.body?.error;
  const details = error?.details ?? (error?.field === undefined ? [] : [{ field: error.field, message: error.message }]);
  return { status: res.status, message: details.find((d) => d.field === field)?.message, all: res.body };
}

function consoleVerdict(row: Row, name: string): { problems: Problems; body: Record<string, unknown> } {
  const opts = { mode: 'create', tokenBound: true } as const;
  if (row.family === 'general') {
    // The shared fixture is a valid general body: 1 to 2 replicas at 4 in flight each.
    const body: GeneralBody = { ...(generalBody(name, TOKEN) as GeneralBody), ...row.body };
    return { problems: checkGeneral(body, opts), body: { ...body } };
  }
  const body: OrchestratedBody = { name, cluster_id: 1, hardware_instance_id: 1, model: 'org/m', endpoint_bearer_token: TOKEN, ...row.body };
  return { problems: checkOrchestrated(body, opts), body: { ...body } };
}

describe('the console and the control API apply the same field rules', () => {
  it('has a table of at least 25 rows, valid and invalid, over both families', () => {
    expect(ROWS.length).toBeGreaterThanOrEqual(25);
    expect(ROWS.some((r) => r.ok)).toBe(true);
    expect(ROWS.some((r) => r.family === 'orchestrated')).toBe(true);
  });

  it.each(ROWS.map((row, i) => [i, row.family, row.field, row.ok ? 'valid' : 'invalid', row] as const))(
    'row %i: %s %s (%s)',
    async (i, _family, _field, _verdict, row) => {
      const { problems, body } = consoleVerdict(row, `agree-${i}`);
      const server = await serverVerdict(row.family, body, row.field);
      const context = JSON.stringify({ row: row.body, console: problems, server: server.all });
      if (row.ok) {
        expect(problems, context).toEqual({});
        expect(server.status, context).toBe(201);
      } else {
        expect(server.status, context).toBe(400);
        expect(server.message, context).toBeDefined();
        expect(problems[row.field], context).toBe(server.message);
      }
    },
  );
});

describe('the console and the control API say the same of registry credentials and their host', () => {
  it('a vault credential is refused for an image from another registry, in the same words, and taken for one from its own', async () => {
    const made = async (name: string, registry: string) => (await api.call('POST', '/vault/registry-credentials', { name, username: 'team', password: 'agree-password', registry })).body as { id: number; name: string; registry: string };
    const elsewhere = await made('agree-elsewhere', 'registry.example.com:5000');
    const hub = await made('agree-hub', 'docker.io');
    const registryCredentials = [elsewhere, hub];
    for (const [credential, ok] of [[elsewhere, false], [hub, true]] as const) {
      const body = { ...(generalBody(`agree-cred-${credential.id}`, TOKEN) as GeneralBody), registry_credential_id: credential.id };
      const problems = checkGeneral(body, { mode: 'create', tokenBound: true, registryCredentials });
      const server = await serverVerdict('general', { ...body }, 'registry_credential_id');
      const context = JSON.stringify({ console: problems, server: server.all });
      if (ok) {
        expect(problems, context).toEqual({});
        expect(server.status, context).toBe(201);
      } else {
        expect(server.status, context).toBe(400);
        expect(problems.registry_credential_id, context).toBe(server.message);
        expect(server.message).toMatch(/is for the registry registry\.example\.com:5000/);
      }
    }
  });

  it('moving the image to another registry host drops the credentials held, and a change naming none is refused in the same words', async () => {
    const created = await api.call('POST', '/deployments/general', { ...generalBody('agree-move', TOKEN), max_replicas: 1, registry_username: 'me', registry_password: 'pw' });
    expect(created.status).toBe(201);
    const patch = { image: 'nvcr.io/nim/meta/llama' };
    const res = await api.call('PATCH', `/deployments/general/${created.body.id}`, patch);
    expect(res.status).toBe(400);
    const server = Object.fromEntries((res.body.error.details as Array<{ field: string; message: string }>).map((p) => [p.field, p.message]));
    const problems = registryMoveProblems({ image: created.body.image, registry_username: 'me', has_registry_password: true, registry_credential_id: null }, patch);
    expect(Object.keys(problems)).toEqual(['registry_username', 'registry_password']);
    for (const field of Object.keys(problems)) expect(problems[field], field).toBe(server[field]);
    // Named (here: null), the change goes through on both sides.
    const cleared = { ...patch, registry_username: null, registry_password: null };
    expect(registryMoveProblems({ image: created.body.image, registry_username: 'me', has_registry_password: true, registry_credential_id: null }, cleared)).toEqual({});
    expect((await api.call('PATCH', `/deployments/general/${created.body.id}`, cleared)).status).toBe(200);
    expect((await api.call('DELETE', `/deployments/general/${created.body.id}`)).status).toBe(202);
  });
});
