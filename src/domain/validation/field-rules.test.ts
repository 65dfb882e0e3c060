// Unit tests of the single-field rules the control API and the console share: the bounds sit
// where the messages say, and the module stays importable by a browser bundle.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  annotationKeyProblem,
  bodyLimitProblem,
  cooldownProblem,
  envNameProblem,
  kindOf,
  maxQueueProblem,
  maxReplicasProblem,
  minReplicasProblem,
  nameProblems,
  requestsPerSecondProblem,
  tagProblem,
  tokenProblem,
} from './field-rules.js';

describe('field rules', () => {
  it('reports every problem of a name, in order, and none for a good one', () => {
    expect(nameProblems('good-name-1')).toEqual([]);
    expect(nameProblems('-Bad_')).toEqual([
      'name may contain only lowercase letters, digits and hyphens',
      'name must start with a lowercase letter',
      'name must end with a letter or digit',
    ]);
    expect(nameProblems('a'.repeat(21))).toEqual([`name must be at most 20 characters; "${'a'.repeat(21)}" has 21`]);
  });

  it('puts each bound at the edge the message names', () => {
    expect(cooldownProblem(3600)).toBeUndefined();
    expect(cooldownProblem(3601)).toMatch(/between 0 and 3600/);
    expect(bodyLimitProblem(1024)).toBeUndefined();
    expect(bodyLimitProblem(1023)).toMatch(/between 1024/);
    expect(tokenProblem('a'.repeat(8))).toBeUndefined();
    expect(tokenProblem('a'.repeat(7))).toMatch(/8 to 512/);
    expect(tagProblem('a'.repeat(128))).toBeUndefined();
    expect(tagProblem('a'.repeat(129))).toMatch(/container image tag/);
    expect(maxQueueProblem(100_000, 1000)).toBeUndefined();
    expect(maxQueueProblem('10', 1000)).toMatch(/got a string; omit it for the default, 1000$/);
    expect(requestsPerSecondProblem(0)).toMatch(/got a number 0$/);
    expect(minReplicasProblem('general', 0)).toBeUndefined();
    expect(minReplicasProblem('orchestrated', 0)).toMatch(/do not scale to zero/);
    expect(maxReplicasProblem(1, 2)).toBe('max_replicas (1) must be at least min_replicas (2)');
    expect(maxReplicasProblem(1, undefined)).toBeUndefined();
  });

  it('judges a variable name by its syntax, then by the names a deployment may not set', () => {
    expect(envNameProblem('GOOD_1', true)).toBeUndefined();
    expect(envNameProblem('1BAD', false)).toMatch(/is invalid/);
    expect(envNameProblem('INFERGATE_ID', false)).toMatch(/set by the runtime/);
    expect(envNameProblem('LD_PRELOAD', false)).toBeUndefined();
    expect(envNameProblem('LD_PRELOAD', true)).toMatch(/dynamic loader/);
    expect(annotationKeyProblem('example.com/team')).toBeUndefined();
    expect(annotationKeyProblem('Example.com/team')).toMatch(/annotation key/);
  });

  it('names what a value is without echoing it', () => {
    expect([null, [], undefined, 1, 1.5, 2 ** 60, {}, 'x'].map(kindOf)).toEqual([
      'null',
      'an array',
      'nothing',
      'a number',
      'a fractional number',
      'an integer beyond the safe range',
      'an object',
      'a string',
    ]);
  });

  it('imports nothing a browser bundle cannot take (the console bundles it)', () => {
    const source = readFileSync(new URL('./field-rules.ts', import.meta.url), 'utf8');
    const imports = [...source.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(imports.every((from) => from?.startsWith('../') && !from.includes('node:'))).toBe(true);
  });
});
