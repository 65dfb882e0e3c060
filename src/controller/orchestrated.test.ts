// The Frontend's command line follows the deployment's routing_policy; secret environment
// variables reach the workers' environment, never the Frontend's; workers answer under the
// served model name.
import { describe, expect, it } from 'vitest';
import { COMPONENT } from '../domain/components.js';
import type { DeploymentRecord } from '../domain/records.js';
import { orchestratedSpec } from '../../test/helpers/spec-fixtures.js';
import { orchestratedRequest } from './orchestrated.js';

describe('orchestratedRequest', () => {
  const record = { id: 3 } as DeploymentRecord;
  const frontendCommand = (routing_policy?: 'affinity' | 'prefix_aware') =>
    orchestratedRequest(record, orchestratedSpec({ routing_policy }), COMPONENT.Frontend, 1, 'r-1', '/data/w.json', null, {}).command;

  it('asks the Frontend for the prefix-aware policy only when the deployment does', () => {
    expect(frontendCommand('prefix_aware').join(' ')).toContain('--routing-policy prefix-aware');
    expect(frontendCommand('affinity')).not.toContain('--routing-policy');
    expect(frontendCommand(undefined)).not.toContain('--routing-policy');
  });

  it('gives the workers the plain and secret variables, and the Frontend neither', () => {
    const spec = orchestratedSpec({ env: { A: '1' } });
    const secret = { REGISTRY_API_KEY: 'unsealed-key' };
    expect(orchestratedRequest(record, spec, COMPONENT.Worker, 1, 'w-1', '/data/w.json', null, secret).env).toEqual({ A: '1', REGISTRY_API_KEY: 'unsealed-key' });
    expect(orchestratedRequest(record, spec, COMPONENT.Frontend, 1, 'f-1', '/data/w.json', null, secret).env).toEqual({});
  });

  it('workers load the model and answer under the served name, which extra_args cannot override', () => {
    const spec = orchestratedSpec({ model: 'org/m', served_model_name: 'chat', extra_args: ['--served-model-name', 'other'] });
    const command = orchestratedRequest(record, spec, COMPONENT.Worker, 1, 'w-1', '/data/w.json', null, {}).command;
    expect(command.slice(0, 2)).toEqual(['--model', 'org/m']);
    expect(command.slice(-2)).toEqual(['--served-model-name', 'chat']);
    const plain = orchestratedRequest(record, orchestratedSpec({ model: 'org/m', served_model_name: null }), COMPONENT.Worker, 1, 'w-1', '/data/w.json', null, {}).command;
    expect(plain).not.toContain('--served-model-name');
  });
});
