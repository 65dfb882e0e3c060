// The defaults object against the flag table it is derived from: every tunable flag's default
// string, read as the table says, is the value at that flag's place in DEFAULTS, and changing
// the flag moves that very place; and no `DEFAULT_…` constant elsewhere in src/ repeats one.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseServeConfig } from './config.js';
import { DEFAULTS } from './defaults.js';
import { SERVE_OPTIONS, settingsOf } from './serve-flags.js';

/** How a flag's text becomes the value the parts get: seconds → ms, a count, a decimal, a size. */
type Kind = 'seconds' | 'count' | 'decimal' | 'size';

/** Each tunable flag, how it is read, and where it lands in the settings (some in two parts). */
const TUNABLES: Record<string, { kind: Kind; at: string[] }> = {
  'upstream-headers-timeout': { kind: 'seconds', at: ['gateway.upstream.headersMs'] },
  'upstream-idle-timeout': { kind: 'seconds', at: ['gateway.upstream.idleMs'] },
  'upstream-connect-timeout': { kind: 'seconds', at: ['gateway.upstream.connectMs'] },
  'grpc-first-message-timeout': { kind: 'seconds', at: ['gateway.upstream.firstMessageMs'] },
  'affinity-load-factor': { kind: 'decimal', at: ['gateway.loadFactor'] },
  'tls-handshake-timeout': { kind: 'seconds', at: ['gateway.clientTimeouts.tlsHandshakeMs', 'api.timeouts.tlsHandshakeMs'] },
  'keep-alive-timeout': { kind: 'seconds', at: ['gateway.clientTimeouts.keepAliveMs', 'api.timeouts.keepAliveMs'] },
  'h2-idle-timeout': { kind: 'seconds', at: ['gateway.clientTimeouts.h2IdleMs'] },
  'request-headers-timeout': { kind: 'seconds', at: ['gateway.clientTimeouts.headersMs', 'api.timeouts.headersMs'] },
  'max-connections': { kind: 'count', at: ['gateway.connections.maxConnections'] },
  'max-connections-per-client': { kind: 'count', at: ['gateway.connections.maxConnectionsPerClient'] },
  'api-max-connections': { kind: 'count', at: ['api.connections.maxConnections'] },
  'api-max-connections-per-client': { kind: 'count', at: ['api.connections.maxConnectionsPerClient'] },
  'body-idle-timeout': { kind: 'seconds', at: ['gateway.body.idleMs'] },
  'max-request-body': { kind: 'size', at: ['gateway.body.maxBytes'] },
  'activator-queue-size': { kind: 'count', at: ['gateway.activator.queueSize'] },
  'activator-timeout': { kind: 'seconds', at: ['gateway.activator.timeoutMs'] },
  'auth-failure-rate': { kind: 'count', at: ['gateway.authFailures.ratePerSecond'] },
  'drain-timeout': { kind: 'seconds', at: ['controller.drainTimeoutMs'] },
  'stop-grace': { kind: 'seconds', at: ['controller.stopGraceMs'] },
  'rollout-surge': { kind: 'count', at: ['controller.rolloutSurge'] },
  'rollout-deadline': { kind: 'seconds', at: ['controller.rolloutDeadlineMs'] },
  'controller-lease-ttl': { kind: 'seconds', at: ['controller.leaseTtlMs'] },
  'autoscale-stable-window': { kind: 'seconds', at: ['autoscaler.stableMs'] },
  'autoscale-panic-window': { kind: 'seconds', at: ['autoscaler.panicMs'] },
  'scale-to-zero-grace': { kind: 'seconds', at: ['autoscaler.scaleToZeroGraceMs'] },
};

/** Flags with a number for a default that configure no part's defaults: where to listen, the quota. */
const NOT_TUNABLES = new Set(['gateway-port', 'api-port', 'metrics-port', 'gpu-quota']);

const UNITS: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

function valueOf(kind: Kind, text: string): number {
  if (kind === 'seconds') return Number(text) * 1000;
  if (kind !== 'size') return Number(text);
  const m = /^(\d+)([A-Za-z]*)$/.exec(text);
  if (!m || UNITS[m[2]!] === undefined) throw new Error(`not a size the test knows: ${text}`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

/** Another valid value than the default, as a flag would give it. */
function otherThan(kind: Kind, text: string): string {
  if (kind === 'decimal') return String(Number(text) + 0.25);
  if (kind === 'size') return text.replace(/^\d+/, (n) => String(Number(n) + 1));
  return String(Number(text) + 1);
}

function at(settings: unknown, dotted: string): unknown {
  return dotted.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], settings);
}

const specOf = (flag: string) => {
  const spec = SERVE_OPTIONS.find((o) => o.flag === flag);
  if (!spec) throw new Error(`--${flag} is not in the flag table`);
  return spec;
};

describe('the defaults object', () => {
  it('is what an empty command line in an empty environment configures, frozen', () => {
    expect(DEFAULTS).toEqual(settingsOf(parseServeConfig([], {}, '/srv/app')));
    expect(Object.isFrozen(DEFAULTS)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.gateway.upstream)).toBe(true);
    expect(() => {
      (DEFAULTS.gateway.upstream as { connectMs: number }).connectMs = 1;
    }).toThrow(TypeError);
  });

  it('knows every flag of the table whose default is a number', () => {
    const numeric = SERVE_OPTIONS.filter((o) => /^\d+(\.\d+)?([KMG]i?B)?$/.test(o.default)).map((o) => o.flag);
    const unknown = numeric.filter((flag) => !(flag in TUNABLES) && !NOT_TUNABLES.has(flag));
    expect(unknown, 'a new tunable flag: add it to TUNABLES (and to the defaults object)').toEqual([]);
  });

  it.each(Object.entries(TUNABLES))('holds --%s\'s default where the flag lands', (flag, { kind, at: places }) => {
    const spec = specOf(flag);
    for (const place of places) expect(at(DEFAULTS, place), place).toBe(valueOf(kind, spec.default));
    const other = otherThan(kind, spec.default);
    const changed = settingsOf(parseServeConfig([`--${flag}`, other], {}, '/srv/app'));
    for (const place of places) expect(at(changed, place), place).toBe(valueOf(kind, other));
  });

  it('writes the settings no flag sets once, and derives the auth-failure burst from the rate', () => {
    expect(DEFAULTS.gateway.ejection).toEqual({ threshold: 3, baseMs: 10_000, maxMs: 300_000 });
    expect(DEFAULTS.gateway.authFailures).toEqual({ ratePerSecond: 50, burst: 200, delayMs: 1000, maxHeld: 512 });
    expect(settingsOf(parseServeConfig(['--auth-failure-rate', '0'], {}, '/srv/app')).gateway.authFailures).toMatchObject({ ratePerSecond: 0, burst: 0, maxHeld: 0 });
  });
});

describe('src/ outside config/', () => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  /** Constants named DEFAULT_ whose figures match a flag's by coincidence, and why they are not that flag's. */
  const UNRELATED: Record<string, string> = {
    DEFAULT_TIMING: 'local replica probes and restart backoff (its 30 s cap is no drain or body timeout)',
    DEFAULT_PULL_BACKOFF: 'image pull retries (its 5 s first retry is no connect timeout)',
    DEFAULT_BLOCK_CHARS: 'prompt block size in characters (not a connection cap)',
  };

  function sources(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const file = path.join(dir, e.name);
      if (e.isDirectory()) return file === path.join(root, 'config') ? [] : sources(file);
      return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [file] : [];
    });
  }

  it('declares no DEFAULT_ constant holding a flag\'s default', () => {
    // Values of 0 and 1 are everywhere; a duplicate of those is left to review.
    const flagValues = new Map<number, string>();
    for (const [flag, { kind }] of Object.entries(TUNABLES)) {
      const value = valueOf(kind, specOf(flag).default);
      if (value > 1) flagValues.set(value, flag);
    }
    const duplicates: string[] = [];
    for (const file of sources(root)) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\bconst\s+(DEFAULT_[A-Z0-9_]+)\b[^=]*=([^;]+);/g)) {
        const [, name, init] = m as unknown as [string, string, string];
        if (name in UNRELATED) continue;
        for (const literal of init.match(/\b\d[\d_]*(\.\d+)?\b/g) ?? []) {
          const flag = flagValues.get(Number(literal.replace(/_/g, '')));
          if (flag) duplicates.push(`${path.relative(root, file)}: ${name} holds ${literal}, the default of --${flag} (read it from DEFAULTS)`);
        }
      }
    }
    expect(duplicates).toEqual([]);
  });
});
