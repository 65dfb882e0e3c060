// Unit tests of the console's pure form modules: the browser's copy of the API's request rules
// (console/src/forms/rules.ts) and the Settings forecast of a PATCH (src/domain/patch-effect.ts).
// They sit here because the test runner looks in src/ and test/ only.

import { describe, expect, it } from 'vitest';
import {
  authProblems,
  checkGeneral,
  checkOrchestrated,
  flowControlProblems,
  limitsProblems,
  linesToArgs,
  nameProblem,
  parseWhole,
  placeholderProblem,
  registryMoveProblems,
  scalingProblems,
  type GeneralBody,
} from '../../console/src/forms/rules.js';
import { classifyPatch, diffBodies, savedMessage } from '../../src/domain/patch-effect.js';

const minimal: GeneralBody = {
  name: 'demo',
  cluster_id: 1,
  hardware_instance_id: 1,
  image: 'infergate/reference-engine',
  container_port: 8000,
  endpoint_bearer_token: 'tok-demo-123456',
  env: { GREETING: 'hello' },
};

describe('console form rules', () => {
  it('accepts the minimal general request the API accepts', () => {
    expect(checkGeneral(minimal, { mode: 'create', tokenBound: true })).toEqual({});
  });

  it('names the 20-character limit for a 21-character name, as the API does', () => {
    expect(nameProblem('a'.repeat(21))).toBe(`name must be at most 20 characters; "${'a'.repeat(21)}" has 21`);
    expect(nameProblem('a'.repeat(20))).toBeUndefined();
    expect(nameProblem('1abc')).toMatch(/start with a lowercase letter/);
    expect(nameProblem('abc-')).toMatch(/end with a letter or digit/);
    expect(nameProblem('Abc')).toMatch(/only lowercase letters/);
  });

  it('keys problems by the API field, children dotted', () => {
    const problems = checkGeneral(
      {
        ...minimal,
        container_port: 70000,
        health_check_path: 'health',
        env: { '1BAD': 'x' },
        metrics_port: 9100,
        registry_username: 'me',
        config_file: { filename: 'a/b', mount_path: 'etc', content: '' },
      },
      { mode: 'create', tokenBound: true },
    );
    expect(Object.keys(problems).sort()).toEqual(
      ['config_file.filename', 'config_file.mount_path', 'container_port', 'env.1BAD', 'health_check_path', 'metrics_path', 'registry_password'].sort(),
    );
  });

  it('checks secret variable names with the same rule as env, an empty secret, and a name both plain and secret', () => {
    expect(checkGeneral({ ...minimal, secret_env: { REGISTRY_API_KEY: 'k', GONE: null } }, { mode: 'create', tokenBound: true })).toEqual({});
    const problems = checkGeneral({ ...minimal, env: { GREETING: 'hi' }, secret_env: { '1BAD': 'x', EMPTY: '', GREETING: 'hidden' } }, { mode: 'create', tokenBound: true });
    expect(problems).toEqual({
      'secret_env.1BAD': checkGeneral({ ...minimal, env: { '1BAD': 'x' } }, { mode: 'create', tokenBound: true })['env.1BAD'],
      'secret_env.EMPTY': 'type the value of the secret variable EMPTY, or remove its row',
      'secret_env.GREETING': expect.stringContaining('GREETING is both a plain variable (env.GREETING) and a secret one'),
    });
    // Making a plain variable secret in one edit: removed from env, given in secret_env.
    expect(checkOrchestrated({ name: 'o', cluster_id: 1, hardware_instance_id: 1, model: 'org/m', private_endpoint: true, env: {}, secret_env: { GREETING: 'hidden' } }, { mode: 'edit', tokenBound: false })).toEqual({});
  });

  it('lets an empty config file content through (the API allows it) but not a missing mount path', () => {
    expect(checkGeneral({ ...minimal, config_file: { filename: 'a.yaml', mount_path: '/etc/x', content: '' } }, { mode: 'create', tokenBound: true })).toEqual({});
    expect(checkGeneral({ ...minimal, config_file: { filename: 'a.yaml', mount_path: '', content: 'x' } }, { mode: 'create', tokenBound: true })).toHaveProperty('config_file.mount_path');
  });

  it('takes registry credentials from the vault or a username and password, not both, as the API does', () => {
    expect(checkGeneral({ ...minimal, registry_credential_id: 2 }, { mode: 'create', tokenBound: true })).toEqual({});
    const both = checkGeneral({ ...minimal, registry_credential_id: 2, registry_username: 'me', registry_password: 'pw' }, { mode: 'create', tokenBound: true });
    expect(both).toEqual({ registry_credential_id: expect.stringMatching(/not both/) });
    // Editing: a stored password the body keeps counts as given.
    expect(checkGeneral({ ...minimal, registry_credential_id: 2 }, { mode: 'edit', tokenBound: true, registryPasswordStored: true })).toHaveProperty('registry_credential_id');
  });

  it('takes a vault credential only for an image from the registry it is bound to; one bound to none is not used', () => {
    const registryCredentials = [
      { id: 2, name: 'team', registry: 'registry.example.com:5000' },
      { id: 3, name: 'old', registry: null },
    ];
    const at = (image: string, id: number) => checkGeneral({ ...minimal, image, registry_credential_id: id }, { mode: 'create', tokenBound: true, registryCredentials });
    expect(at('registry.example.com:5000/team/engine', 2)).toEqual({});
    expect(at('127.0.0.1:19555/corp/engine', 2)).toEqual({ registry_credential_id: expect.stringMatching(/is for the registry registry\.example\.com:5000, and image 127\.0\.0\.1:19555\/corp\/engine is pulled from 127\.0\.0\.1:19555/) });
    expect(at('registry.example.com:5000/team/engine', 3)).toEqual({ registry_credential_id: expect.stringMatching(/bound to no registry host.*an admin must bind it/) });
  });

  it('Settings: an image moved to another registry host asks for its credentials, or null, on each field the deployment holds', () => {
    const stored = { image: 'registry.example.com:5000/team/engine', registry_username: 'bob', has_registry_password: true, registry_credential_id: null };
    expect(registryMoveProblems(stored, { tag: 'v2' })).toEqual({});
    expect(registryMoveProblems(stored, { image: 'registry.example.com:5000/team/other' })).toEqual({});
    expect(registryMoveProblems(stored, { image: 'other.example/team/engine' })).toEqual({
      registry_username: expect.stringMatching(/are not sent to other\.example: give other\.example's/),
      registry_password: expect.stringMatching(/set registry_username and registry_password to null to pull without/),
    });
    expect(registryMoveProblems(stored, { image: 'other.example/team/engine', registry_username: null, registry_password: null })).toEqual({});
  });

  it('treats a stored registry password as set when editing', () => {
    const body = { ...minimal, registry_username: 'me' };
    expect(checkGeneral(body, { mode: 'edit', tokenBound: true, registryPasswordStored: true })).toEqual({});
    expect(checkGeneral(body, { mode: 'edit', tokenBound: true, registryPasswordStored: false })).toHaveProperty('registry_password');
  });

  it('checks scaling per family', () => {
    expect(scalingProblems('general', { min_replicas: 0, max_replicas: 1 }, 2)).toEqual({});
    expect(scalingProblems('general', { min_replicas: 0, max_replicas: 1 }, null)).toHaveProperty('max_concurrency');
    expect(scalingProblems('orchestrated', { min_replicas: 0, max_replicas: 1 }, null)).toHaveProperty('min_replicas');
    expect(scalingProblems('general', { min_replicas: 1, max_replicas: 3 }, null)).toHaveProperty('max_concurrency');
    expect(scalingProblems('orchestrated', { min_replicas: 1, max_replicas: 3 }, null)).toHaveProperty('concurrency');
    expect(scalingProblems('general', { min_replicas: 3, max_replicas: 2 }, 4)).toHaveProperty('max_replicas');
    expect(scalingProblems('general', { cooldown_period: 3601 }, null)).toHaveProperty('cooldown_period');
  });

  it('refuses a public endpoint and a malformed token', () => {
    expect(authProblems({}, false)).toHaveProperty('endpoint_bearer_token');
    expect(authProblems({ private_endpoint: true }, false)).toEqual({});
    expect(authProblems({ endpoint_bearer_token: 'short' }, true)).toHaveProperty('endpoint_bearer_token');
    expect(authProblems({ endpoint_bearer_token: 'has space 12345' }, true)).toHaveProperty('endpoint_bearer_token');
  });

  it('checks the orchestrated model identifier', () => {
    const body = { name: 'o', cluster_id: 1, hardware_instance_id: 1, model: 'no-slash', private_endpoint: true };
    expect(checkOrchestrated(body, { mode: 'create', tokenBound: false })).toHaveProperty('model');
    expect(checkOrchestrated({ ...body, model: 'org/model-1.5' }, { mode: 'create', tokenBound: false })).toEqual({});
  });

  it('checks first_response_timeout_seconds as the API does: whole seconds from 1 to 86400, empty for the default', () => {
    for (const ok of [1, 600, 86_400, null, undefined]) expect(limitsProblems({ first_response_timeout_seconds: ok })).toEqual({});
    for (const bad of [0, -1, 86_401]) {
      expect(limitsProblems({ first_response_timeout_seconds: bad }).first_response_timeout_seconds).toMatch(/whole number of seconds from 1 to 86400 \(a day\), got -?\d+; omit it/);
    }
    expect(checkGeneral({ ...minimal, first_response_timeout_seconds: 0 }, { mode: 'create', tokenBound: true })).toEqual({
      first_response_timeout_seconds: expect.stringMatching(/^first_response_timeout_seconds must be/),
    });
    expect(parseWhole('first_response_timeout_seconds', '1.5')).toEqual({ ok: false, message: 'first_response_timeout_seconds must be a whole number' });
  });

  it('checks flow_control as the API does: a queue of 0 to 100000, each class 0 to 3600 s', () => {
    const flow = (max_queue: number, sheddable = 5) => ({ max_queue, max_wait_seconds: { critical: 60, standard: 30, sheddable } });
    for (const ok of [flow(0), flow(100_000, 0), flow(1000, 3600), null, undefined]) expect(flowControlProblems(ok)).toEqual({});
    expect(flowControlProblems(flow(100_001))).toEqual({ 'flow_control.max_queue': expect.stringMatching(/^flow_control\.max_queue must be a whole number from 0 to 100000 \(0: no request waits, .*\), got 100001; omit it for the default, 1000$/) });
    expect(flowControlProblems(flow(-1, 3601))).toEqual({
      'flow_control.max_queue': expect.any(String),
      'flow_control.max_wait_seconds.sheddable': expect.stringMatching(/^flow_control\.max_wait_seconds\.sheddable must be a whole number of seconds from 0 to 3600/),
    });
    expect(checkGeneral({ ...minimal, flow_control: flow(7, -2) }, { mode: 'create', tokenBound: true })).toEqual({ 'flow_control.max_wait_seconds.sheddable': expect.any(String) });
    expect(checkOrchestrated({ name: 'o', cluster_id: 1, hardware_instance_id: 1, model: 'org/m', private_endpoint: true, flow_control: flow(200_000) }, { mode: 'create', tokenBound: false })).toHaveProperty(['flow_control.max_queue']);
  });

  it('reads typed numbers and argument lines', () => {
    expect(parseWhole('container_port', ' 8000 ')).toEqual({ ok: true, value: 8000 });
    expect(parseWhole('container_port', '')).toEqual({ ok: true, value: null });
    expect(parseWhole('container_port', '8.5').ok).toBe(false);
    expect(linesToArgs('vllm\n serve \n\n--port\r\n8000')).toEqual(['vllm', 'serve', '--port', '8000']);
  });
});

describe('console PATCH forecast', () => {
  const current = { image: 'a', env: { A: '1' }, min_replicas: 1, max_replicas: 1, cooldown_period: 300, private_endpoint: false, metrics_port: 9100 };

  it('sends only what changed, and null for what was cleared', () => {
    const next = { image: 'a', env: { A: '1' }, min_replicas: 1, max_replicas: 2, cooldown_period: 300, private_endpoint: false };
    expect(diffBodies(current, next)).toEqual({ max_replicas: 2, metrics_port: null });
  });

  it('scales in place when only replica fields change', () => {
    const plan = classifyPatch({ max_replicas: 2, max_concurrency: 4 }, 1);
    expect(plan.effect).toBe('scale');
    expect(plan.statement).toMatch(/^Scales in place; no new revision/);
  });

  it('makes revision N+1 for any other spec field or a secret', () => {
    expect(classifyPatch({ env: { A: '2' }, max_replicas: 2 }, 3).statement).toMatch(/^Creates revision 4 \(a rolling update\)/);
    expect(classifyPatch({ registry_password: 'x' }, 1).effect).toBe('revision');
  });

  it('takes effect at once for credentials and limits', () => {
    const plan = classifyPatch({ endpoint_bearer_token: 'tok-123456789', rate_limit: { requests_per_second: 1 } }, 1);
    expect(plan.effect).toBe('at_once');
    expect(plan.statement).toMatch(/^Takes effect at once; no revision/);
    expect(classifyPatch({ first_response_timeout_seconds: 30 }, 1)).toMatchObject({ effect: 'at_once', atOnceFields: ['first_response_timeout_seconds'] });
    expect(classifyPatch({ first_response_timeout_seconds: null, max_replicas: 3 }, 1).effect).toBe('scale');
    expect(classifyPatch({ flow_control: null }, 1)).toMatchObject({ effect: 'at_once', atOnceFields: ['flow_control'] });
  });

  it('says what happened after saving', () => {
    expect(savedMessage({ revision: 1 }, { revision: 2 }, classifyPatch({ image: 'b' }, 1))).toBe('Saved: revision 2 is rolling out');
    expect(savedMessage({ revision: 1 }, { revision: 1 }, classifyPatch({ max_replicas: 2 }, 1))).toBe('Saved: scaled in place');
  });
});

describe('the example command placeholder', () => {
  it('is caught before a replica fails on it', () => {
    expect(placeholderProblem(['vllm', 'serve', '<org>/<model>', '--port', '8000'])).toMatch(/replace <org> in the command/);
    expect(placeholderProblem(['vllm', 'serve', 'meta-llama/Llama-3.1-8B-Instruct'])).toBeUndefined();
    expect(placeholderProblem(['sh', '-c', 'engine < /etc/input'])).toBeUndefined();
    expect(checkGeneral({ ...minimal, command: ['serve', '<org>/<model>'] }, { mode: 'create', tokenBound: true }).command).toMatch(/placeholder/);
  });
});
