// The Frontend's routing policy flag: least-loaded by default, prefix-aware for aggregated only.
import { describe, expect, it } from 'vitest';
import { FrontendOptionsError, parseFrontendOptions } from './options.js';

const base = ['--model', 'org/m', '--workers-file', '/tmp/w.json'];

describe('frontend --routing-policy', () => {
  it('defaults to least-loaded and takes prefix-aware', () => {
    expect(parseFrontendOptions(base, {}).routingPolicy).toBe('least-loaded');
    expect(parseFrontendOptions([...base, '--routing-policy', 'prefix-aware'], {}).routingPolicy).toBe('prefix-aware');
  });

  it('refuses an unknown policy, and prefix-aware for a disaggregated Frontend', () => {
    expect(() => parseFrontendOptions([...base, '--routing-policy', 'random'], {})).toThrow(FrontendOptionsError);
    expect(() => parseFrontendOptions([...base, '--mode', 'disaggregated', '--routing-policy', 'prefix-aware'], {})).toThrow(/aggregated workers/);
  });
});
