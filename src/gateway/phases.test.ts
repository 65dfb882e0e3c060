import { describe, expect, it } from 'vitest';
import { headersPhase, MAX_REQUEST_HEADERS, targetPhase } from './phases.js';

const raw = (...names: string[]): string[] => names.flatMap((n) => [n, 'v']);

describe('headersPhase', () => {
  it('passes up to the limit, pseudo-headers not counted', () => {
    const names = Array.from({ length: MAX_REQUEST_HEADERS }, (_, i) => `x-${i}`);
    expect(headersPhase(raw(':method', ':path', ':authority', ':scheme', ...names)).ok).toBe(true);
  });

  it('answers 431 past the limit', () => {
    const r = headersPhase(raw(...Array.from({ length: MAX_REQUEST_HEADERS + 1 }, (_, i) => `x-${i}`)));
    expect(r.ok ? null : r.rejection).toMatchObject({ status: 431, code: 'headers_too_large' });
  });

  it.each([
    [['Host', 'host'], /more than one Host/],
    [['authorization', 'Authorization'], /more than one Authorization/],
  ])('answers 400 to %j', (names, message) => {
    const r = headersPhase(raw(...names));
    expect(r.ok ? null : r.rejection).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(r.ok ? '' : r.rejection.message).toMatch(message);
  });
});

describe('targetPhase', () => {
  it('passes origin-form targets unchanged', () => {
    expect(targetPhase('/v1/models?a=1', 'a.test')).toEqual({ ok: true, value: '/v1/models?a=1' });
  });

  it('turns an absolute-form target for the Host into origin form (port and case ignored)', () => {
    expect(targetPhase('https://A.test:443/v1/x?q=1', 'a.test')).toEqual({ ok: true, value: '/v1/x?q=1' });
  });

  it.each([
    ['https://b.test/v1/models', 'a.test'],
    ['https://b.test/v1/models', undefined],
    ['*', 'a.test'],
    ['ftp://a.test/x', 'a.test'],
    ['not a url', 'a.test'],
  ])('refuses %s with Host %s', (url, host) => {
    const r = targetPhase(url, host);
    expect(r.ok ? null : r.rejection).toMatchObject({ status: 400, code: 'invalid_request' });
  });
});
