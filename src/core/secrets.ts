// Owns credential primitives: generating keys and tokens, hashing them for storage and
// lookup, constant-time comparison, and sealing secrets at rest (AES-256-GCM).

import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Generated credentials carry a prefix so a leaked one can be recognised by scanners. */
export const TOKEN_PREFIX = 'igt_';
export const SERVICE_KEY_PREFIX = 'igk_';

export function generateCredential(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/**
 * SHA-256, hex. Credentials are random 256-bit values or user tokens of at least 8
 * characters; a fast hash keeps per-request auth cheap and lets the store index by hash.
 */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

export function constantTimeEqualHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

const SEAL_VERSION = 'v1';

/** Encrypts small secrets (registry passwords, hub tokens, private keys) at rest. */
export class Sealer {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the sealing key must be 32 bytes');
    this.key = key;
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [SEAL_VERSION, iv.toString('base64url'), tag.toString('base64url'), body.toString('base64url')].join('.');
  }

  unseal(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== SEAL_VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}
