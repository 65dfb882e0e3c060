// Owns the rate limits counted in Redis, so that every gateway on one Redis draws from the same
// budget (gateway/shared-rate-limit.ts decides when to use it): one Lua script — GCRA for
// requests per second, and a theoretical arrival time for the tokens per minute that a
// finished response spends — run with EVALSHA (loaded once, EVAL when Redis answers NOSCRIPT
// after a restart or a SCRIPT FLUSH), a whole batch of decisions in one pipeline, on a
// connection of its own that never queues a command while Redis is away.
//
// One hash per deployment and credential, `<prefix>:ratelimit:<deployment id>:<credential>`
// (the credential is `token:<sha256>` or `cert:<fingerprint>`, never a secret), expiring once
// both of its budgets are full again: an idle credential costs nothing. Time is Redis's own
// (TIME), so gateways on several hosts need no synchronised clocks.

import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';

/** Which budget refused a request. */
export type SharedLimitKind = 'requests' | 'tokens';

/** One thing a batch asks of Redis, answered in the batch's order. */
export type SharedLimitOp =
  | { op: 'admit'; deploymentId: number; credential: string; requestsPerSecond: number | null; tokensPerMinute: number | null }
  | { op: 'spend'; deploymentId: number; credential: string; tokensPerMinute: number; tokens: number };

/** An admit's answer (a spend's is always ok): refused, with how long until it would pass. */
export type SharedLimitVerdict = { ok: true } | { ok: false; limit: SharedLimitKind; waitMs: number };

/** What the gateway needs of the shared counters; RedisRateLimits is the one implementation. */
export interface SharedLimitStore {
  /** The longest a round trip may take before the gateway decides without it. */
  readonly timeoutMs: number;
  /** Connects; resolves even when Redis cannot be reached yet (run and ping then fail until it can). */
  open(): Promise<void>;
  /** Runs the batch in one round trip; rejects when Redis cannot answer it (unreachable, or an error reply). */
  run(ops: readonly SharedLimitOp[]): Promise<SharedLimitVerdict[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

// KEYS[1] the credential's hash. ARGV: 'admit' or 'spend', now in ms ('' = Redis's clock),
// requests per second ('' = no limit), tokens per minute ('' = no limit), tokens spent.
// Fields: rl/rt the requests limit and its theoretical arrival time (TAT), tl/tt the same for
// tokens. A TAT made under another limit is dropped: a changed limit starts full. The hash
// expires a second after the later of its TATs, when both budgets are full again (written as
// whole digits: a Lua number may print with an exponent, which PEXPIRE refuses).
// Requests: each takes 1000/rps ms of the TAT; one passes while the TAT it would leave is at
// most one second's worth (at least one request) ahead of now — a burst of one second.
// Tokens: each spent token moves the TAT 60000/tpm ms; a request passes while the TAT is less
// than a minute ahead (something is left), so a long answer may push it further: the debt.
// Returns {0, 0} passed (or spent), {1, ms} requests refused, {2, ms} tokens refused, with the
// time until the request would pass.
const RATE_LIMIT_LUA = `
local now = tonumber(ARGV[2])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local rps, tpm = ARGV[3], ARGV[4]
local s = redis.call('HMGET', KEYS[1], 'rl', 'rt', 'tl', 'tt')
local rt0, tt0 = tonumber(s[2]) or now, tonumber(s[4]) or now
local rt, tt = now, now
if s[1] == rps then rt = math.max(now, rt0) end
if s[3] == tpm then tt = math.max(now, tt0) end
if ARGV[1] == 'spend' then
  if tpm == '' then return {0, 0} end
  tt = tt + tonumber(ARGV[5]) * 60000 / tonumber(tpm)
  redis.call('HSET', KEYS[1], 'tl', tpm, 'tt', tt)
else
  if tpm ~= '' and tt - now >= 60000 then return {2, math.ceil(tt - now - 60000)} end
  if rps == '' then return {0, 0} end
  local r = tonumber(rps)
  local interval = 1000 / r
  local burst = math.max(1, r) * interval
  local after = rt + interval
  if after - now > burst + 1e-6 then return {1, math.ceil(after - now - burst)} end
  rt = after
  redis.call('HSET', KEYS[1], 'rl', rps, 'rt', rt)
end
local ttl = math.min(math.ceil(math.max(rt, tt, rt0, tt0) - now) + 1000, 1e12)
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', ttl))
return {0, 0}
`;

/** The script's SHA-1, by which EVALSHA names it. */
export const RATE_LIMIT_SHA = createHash('sha1').update(RATE_LIMIT_LUA).digest('hex');

export interface RedisRateLimitsOptions {
  url: string;
  /** The store's key prefix (--redis-prefix). */
  prefix: string;
  /** The longest a round trip may take before the gateway decides without it (default 50 ms). */
  timeoutMs?: number;
  /** Tests only: the time the script counts from instead of Redis's TIME. */
  now?: () => number;
}

export class RedisRateLimits implements SharedLimitStore {
  readonly timeoutMs: number;
  private readonly redis: Redis;

  constructor(private readonly opts: RedisRateLimitsOptions) {
    this.timeoutMs = opts.timeoutMs ?? 50;
    this.redis = new Redis(opts.url, {
      lazyConnect: true,
      connectTimeout: 2_000,
      // A decision is worth nothing late: while disconnected every command fails at once (the
      // caller decides locally), and nothing is sent twice.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (times: number) => Math.min(times * 100, 1_000),
    });
    // Failures surface as the commands' rejections; the caller logs the outage once.
    this.redis.on('error', () => undefined);
  }

  async open(): Promise<void> {
    try {
      await this.redis.connect();
      await this.redis.script('LOAD', RATE_LIMIT_LUA);
    } catch {
      // Not reachable yet: ioredis keeps reconnecting, and the script is sent by EVAL if need be.
    }
  }

  async close(): Promise<void> {
    // QUIT waits for what is in flight; a connection that is not up has nothing to wait for.
    if (this.redis.status !== 'ready') return this.redis.disconnect();
    await this.redis.quit().then(
      () => undefined,
      () => this.redis.disconnect(),
    );
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async run(ops: readonly SharedLimitOp[]): Promise<SharedLimitVerdict[]> {
    const args = ops.map((op) => this.argsOf(op));
    const pipeline = this.redis.pipeline();
    for (const a of args) pipeline.evalsha(RATE_LIMIT_SHA, 1, ...a);
    const replies = await execOrThrow(pipeline);
    const missing: number[] = [];
    replies.forEach(([err], i) => {
      if (err && err.message.startsWith('NOSCRIPT')) missing.push(i);
    });
    if (missing.length > 0) {
      // Redis lost the script (restarted, SCRIPT FLUSH): EVAL sends it again and caches it.
      const again = this.redis.pipeline();
      for (const i of missing) again.eval(RATE_LIMIT_LUA, 1, ...args[i]!);
      const resent = await execOrThrow(again);
      missing.forEach((i, at) => (replies[i] = resent[at]!));
    }
    return replies.map(([err, reply]) => {
      if (err) throw err;
      return verdictOf(reply);
    });
  }

  private argsOf(op: SharedLimitOp): [string, string, string, string, string, string] {
    const key = `${this.opts.prefix}:ratelimit:${op.deploymentId}:${op.credential}`;
    const now = this.opts.now ? String(this.opts.now()) : '';
    if (op.op === 'spend') return [key, 'spend', now, '', String(op.tokensPerMinute), String(op.tokens)];
    return [key, 'admit', now, numberArg(op.requestsPerSecond), numberArg(op.tokensPerMinute), '0'];
  }
}

type Replies = Array<[Error | null, unknown]>;

async function execOrThrow(pipeline: ReturnType<Redis['pipeline']>): Promise<Replies> {
  const replies = await pipeline.exec();
  if (replies === null) throw new Error('Redis pipeline was discarded');
  return replies;
}

function numberArg(n: number | null): string {
  return n === null ? '' : String(n);
}

function verdictOf(reply: unknown): SharedLimitVerdict {
  const [code, waitMs] = reply as [number, number];
  if (code === 0) return { ok: true };
  return { ok: false, limit: code === 1 ? 'requests' : 'tokens', waitMs };
}
