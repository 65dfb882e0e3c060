import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { constantTimeEqualHex, generateCredential, Sealer, sha256Hex, TOKEN_PREFIX } from './secrets.js';

describe('secrets', () => {
  it('generates distinct prefixed credentials', () => {
    const a = generateCredential(TOKEN_PREFIX);
    const b = generateCredential(TOKEN_PREFIX);
    expect(a).toMatch(/^igt_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
  });

  it('compares hashes in constant time and rejects different lengths', () => {
    const h = sha256Hex('token-value');
    expect(constantTimeEqualHex(h, sha256Hex('token-value'))).toBe(true);
    expect(constantTimeEqualHex(h, sha256Hex('token-valuf'))).toBe(false);
    expect(constantTimeEqualHex(h, h.slice(0, 10))).toBe(false);
  });

  it('seals and unseals; a tampered or foreign-key secret fails', () => {
    const sealer = new Sealer(randomBytes(32));
    const sealed = sealer.seal('registry-password');
    expect(sealed).not.toContain('registry-password');
    expect(sealer.unseal(sealed)).toBe('registry-password');
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => sealer.unseal(parts.join('.'))).toThrow();
    expect(() => new Sealer(randomBytes(32)).unseal(sealed)).toThrow();
  });
});
