import { describe, expect, it } from 'vitest';
import { classifyPullError, PullProgress, splitRef } from './image-puller.js';

describe('classifyPullError', () => {
  const ref = '127.0.0.1:5000/team/engine:v9';
  it.each([
    ['manifest for 127.0.0.1:5000/team/engine:v9 not found: manifest unknown: manifest unknown', 'unknown_tag', /tag v9 of 127.0.0.1:5000\/team\/engine not found in 127.0.0.1:5000/],
    ['Head "http://127.0.0.1:5000/v2/team/engine/manifests/v9": no basic auth credentials', 'refused_credentials', /refused the credentials .* check registry_username and registry_password/],
    ['unauthorized: authentication required', 'refused_credentials', /refused the credentials/],
    ['Get "http://127.0.0.1:5000/v2/": dial tcp 127.0.0.1:5000: connect: connection refused', 'unreachable_registry', /the registry 127.0.0.1:5000 is unreachable/],
    ['repository 127.0.0.1:5000/team/engine not found: name unknown: repository name not known to registry', 'unknown_image', /image 127.0.0.1:5000\/team\/engine not found in 127.0.0.1:5000/],
    ['something else went wrong', 'other', /pulling 127.0.0.1:5000\/team\/engine:v9 failed: something else/],
  ])('%s → %s', (message, kind, reason) => {
    const failure = classifyPullError(ref, message);
    expect(failure.kind).toBe(kind);
    expect(failure.reason).toMatch(reason);
  });

  it('names Docker Hub for short names', () => {
    expect(classifyPullError('vllm/vllm-openai:latest', 'dial tcp: lookup registry-1.docker.io: no such host').reason).toMatch(/the registry Docker Hub is unreachable/);
  });
});

describe('splitRef', () => {
  it('does not take a registry port for a tag', () => {
    expect(splitRef('127.0.0.1:5000/team/engine:v1')).toEqual({ repo: '127.0.0.1:5000/team/engine', tag: 'v1' });
    expect(splitRef('127.0.0.1:5000/team/engine')).toEqual({ repo: '127.0.0.1:5000/team/engine', tag: 'latest' });
  });
});

describe('PullProgress', () => {
  it('grows with the bytes of every layer and reaches 100 only when all are done', () => {
    const p = new PullProgress();
    expect(p.update({ id: 'aaaaaaaaaaaa', status: 'Pulling fs layer' })).toBe(0);
    expect(p.update({ id: 'bbbbbbbbbbbb', status: 'Downloading', progressDetail: { current: 50, total: 100 } })).toBe(50);
    expect(p.update({ id: 'aaaaaaaaaaaa', status: 'Downloading', progressDetail: { current: 100, total: 300 } })).toBe(37);
    expect(p.update({ id: 'aaaaaaaaaaaa', status: 'Download complete' })).toBe(87);
    expect(p.update({ id: 'bbbbbbbbbbbb', status: 'Pull complete' })).toBe(100);
  });

  it('ignores events that are not about a layer', () => {
    const p = new PullProgress();
    expect(p.update({ status: 'Pulling from team/engine', id: 'v1' })).toBe(0);
  });
});
