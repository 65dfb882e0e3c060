// Owns the shared store on Redis, for running several infergate processes on one state.
// Every write (unique-key claims, compare-and-set, the record itself, the change PUBLISH)
// is one Lua script, so Redis applies it atomically; the change feed is a pub/sub channel.
// A deployment's events are a list of JSON strings beside the records, folded and capped by a
// script that mirrors store/events.ts, and deleted by the script that deletes the deployment.

import { Redis } from 'ioredis';
import { KINDS, type DeploymentEvent, type Kind, type NewDeploymentEvent, type RecordMap } from '../domain/records.js';
import { EVENT_FOLD_WINDOW, EVENTS_PER_DEPLOYMENT } from './events.js';
import {
  ConflictError,
  FencedError,
  NotFoundError,
  StoreError,
  StoreUnavailableError,
  VersionConflictError,
  type ChangeEvent,
  type ChangeListener,
  type CreateOptions,
  type Fence,
  type Store,
  type UniqueKey,
  type Versioned,
  type WriteOptions,
} from './store.js';

export interface RedisStoreOptions {
  url: string;
  /** Namespace for every key; tests use a random one. */
  prefix?: string;
}

/** What a record's hash field holds. */
interface Envelope {
  v: number;
  u: UniqueKey[];
  d: unknown;
}

// Every write script takes a fence last: KEYS[#KEYS] the lease key, ARGV[#ARGV] the holder the
// write is made for ('' for an unfenced write). Checked before anything is written, in the
// same script, so a deposed lease holder can never write after its successor took over.
const FENCE_LUA = `
local fence_holder = ARGV[#ARGV]
if fence_holder ~= '' and redis.call('GET', KEYS[#KEYS]) ~= fence_holder then return {'fenced'} end
`;

// KEYS[1] record hash, KEYS[2..n] index hashes, then the fence key; ARGV: id, envelope,
// channel, event, ref, index keys, then the fence holder.
// Checks every claim before writing anything, so a conflict leaves no trace.
const CREATE_LUA = `${FENCE_LUA}
local n = #KEYS - 1
for i = 2, n do
  if redis.call('HEXISTS', KEYS[i], ARGV[i + 4]) == 1 then return {'conflict', i - 1} end
end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return {'exists'} end
for i = 2, n do redis.call('HSET', KEYS[i], ARGV[i + 4], ARGV[5]) end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return {'ok', 1}
`;

// KEYS[1] record hash, KEYS[2] the fence key; ARGV: id, expected version, data JSON, channel,
// kind, fence holder.
// The new envelope is spliced as text so the record's JSON never goes through cjson, which
// would turn empty arrays into objects.
const UPDATE_LUA = `${FENCE_LUA}
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'missing'} end
local env = cjson.decode(raw)
if env.v ~= tonumber(ARGV[2]) then return {'stale'} end
local v = env.v + 1
local u = '[]'
if #env.u > 0 then u = cjson.encode(env.u) end
redis.call('HSET', KEYS[1], ARGV[1], '{"v":' .. v .. ',"u":' .. u .. ',"d":' .. ARGV[3] .. '}')
redis.call('PUBLISH', ARGV[4], '{"kind":"' .. ARGV[5] .. '","id":' .. ARGV[1] .. ',"op":"put","version":' .. v .. '}')
return {'ok', v}
`;

// KEYS[1] record hash, KEYS[2] the record's events list (a deployment's: deleted with it),
// KEYS[3] the fence key; ARGV: id, expected version ('' = any), channel, kind, index key
// prefix, fence holder.
// The index hashes are only known from the stored envelope, so they are derived here; that
// is fine on a standalone Redis (not Cluster).
const DELETE_LUA = `${FENCE_LUA}
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'missing'} end
local env = cjson.decode(raw)
if ARGV[2] ~= '' and env.v ~= tonumber(ARGV[2]) then return {'stale'} end
redis.call('HDEL', KEYS[1], ARGV[1])
if ARGV[4] == 'deployment' then redis.call('DEL', KEYS[2]) end
local ref = ARGV[4] .. ':' .. ARGV[1]
for _, u in ipairs(env.u) do
  local idx = ARGV[5] .. u.index
  if redis.call('HGET', idx, u.key) == ref then redis.call('HDEL', idx, u.key) end
end
redis.call('PUBLISH', ARGV[3], '{"kind":"' .. ARGV[4] .. '","id":' .. ARGV[1] .. ',"op":"delete","version":' .. env.v .. '}')
return {'ok', env.v}
`;

// KEYS[1] the deployment hash, KEYS[2] its events list, KEYS[3] the fence key; ARGV: id, time,
// type, reason, message, fold window, cap, fence holder. store/events.ts's addEvent: a recent
// identical event is taken out (its slot marked '', which no JSON event is, then removed) and
// put back as the newest with its count and time moved on; else a new one is appended.
const APPEND_EVENT_LUA = `${FENCE_LUA}
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return {'missing'} end
local n = redis.call('LLEN', KEYS[2])
local from = n - tonumber(ARGV[6])
if from < 0 then from = 0 end
local recent = redis.call('LRANGE', KEYS[2], from, -1)
for i = #recent, 1, -1 do
  local e = cjson.decode(recent[i])
  if e.type == ARGV[3] and e.reason == ARGV[4] and e.message == ARGV[5] then
    e.time = ARGV[2]
    e.count = e.count + 1
    redis.call('LSET', KEYS[2], from + i - 1, '')
    redis.call('LREM', KEYS[2], 1, '')
    redis.call('RPUSH', KEYS[2], cjson.encode(e))
    return {'ok', 1}
  end
end
redis.call('RPUSH', KEYS[2], cjson.encode({time = ARGV[2], first_time = ARGV[2], type = ARGV[3], reason = ARGV[4], message = ARGV[5], count = 1}))
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[7]), -1)
return {'ok', 1}
`;

type ScriptReply = [string, number?];
type ScriptCommand = (numKeys: number, ...args: string[]) => Promise<ScriptReply>;

// KEYS[1] lease key, KEYS[2] its epoch counter (never expires); ARGV holder, ttl ms. Take it
// when free (a new epoch), renew it when ours; the epoch held, or 0.
const LEASE_LUA = `
local current = redis.call('GET', KEYS[1])
if current == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
  return redis.call('INCR', KEYS[2])
end
if current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
  return tonumber(redis.call('GET', KEYS[2]) or '1')
end
return 0
`;

const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

// Reports: a hash of publisher → body and a sorted set of publisher → expiry (Redis's own
// clock, so publishers on other hosts need no synchronised clocks).
const PUBLISH_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1
`;

const READ_REPORTS_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, p in ipairs(gone) do
  redis.call('HDEL', KEYS[1], p)
  redis.call('ZREM', KEYS[2], p)
end
return redis.call('HGETALL', KEYS[1])
`;

interface ScriptCommands {
  infergateCreate: ScriptCommand;
  infergateUpdate: ScriptCommand;
  infergateDelete: ScriptCommand;
  infergateAppendEvent: ScriptCommand;
  infergateLease: ScriptCommand;
  infergateRelease: ScriptCommand;
  infergatePublish: ScriptCommand;
  infergateReadReports: ScriptCommand;
}

const CONNECT_TIMEOUT_MS = 5_000;
/** A command unanswered this long fails: the control API answers 503 rather than hang. */
const COMMAND_TIMEOUT_MS = 3_000;
/** Replies that mean Redis is there but cannot serve yet (still loading its data, busy script). */
const UNAVAILABLE_REPLY = /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN)\b/;

export class RedisStore implements Store {
  private readonly url: string;
  private readonly prefix: string;
  private redis: Redis | undefined;
  /** `redis` with every command's failure told apart: unreachable or not (see storeFailure). */
  private guarded: Redis | undefined;
  private subscriber: Redis | undefined;
  private subscribed: Promise<void> | undefined;
  private opened = false;
  private lastError: Error | undefined;
  private readonly listeners = new Set<ChangeListener>();
  private readonly resyncListeners = new Set<() => void>();

  constructor(options: RedisStoreOptions) {
    this.url = options.url;
    this.prefix = options.prefix ?? 'infergate';
  }

  async open(): Promise<void> {
    if (this.opened) return;
    const redis = new Redis(this.url, {
      lazyConnect: true,
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: COMMAND_TIMEOUT_MS,
      // While disconnected every command fails at once (nothing queues until Redis returns),
      // and a command in flight when the connection drops fails rather than being sent again:
      // its write may already be applied, which only its caller can tell.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // Give up at once while opening (so open() fails fast and clearly); reconnect afterwards.
      retryStrategy: (times: number) => (this.opened ? Math.min(times * 200, 2_000) : null),
    });
    redis.on('error', (err: Error) => {
      this.lastError = err;
    });
    try {
      await redis.connect();
    } catch (err) {
      redis.disconnect();
      throw new StoreError(`cannot reach Redis at ${redactRedisUrl(this.url)}: ${reason(this.lastError ?? err)}`);
    }
    redis.defineCommand('infergateCreate', { lua: CREATE_LUA });
    redis.defineCommand('infergateUpdate', { lua: UPDATE_LUA });
    redis.defineCommand('infergateDelete', { lua: DELETE_LUA });
    redis.defineCommand('infergateAppendEvent', { lua: APPEND_EVENT_LUA });
    redis.defineCommand('infergateLease', { lua: LEASE_LUA });
    redis.defineCommand('infergateRelease', { lua: RELEASE_LUA });
    redis.defineCommand('infergatePublish', { lua: PUBLISH_LUA });
    redis.defineCommand('infergateReadReports', { lua: READ_REPORTS_LUA });
    this.redis = redis;
    this.guarded = guard(redis);
    this.opened = true;
  }

  async close(): Promise<void> {
    if (!this.opened) return;
    this.opened = false;
    const connections = [this.subscriber, this.redis].filter((c): c is Redis => c !== undefined);
    this.subscriber = undefined;
    this.subscribed = undefined;
    this.redis = undefined;
    this.guarded = undefined;
    await Promise.all(connections.map((c) => c.quit().then(() => undefined, () => c.disconnect())));
  }

  async ping(): Promise<void> {
    await this.client().ping();
  }

  private leaseKey(name: string): string {
    return `${this.prefix}:lease:${name}`;
  }

  /** The lease key a fenced write is checked against (any key for an unfenced one: not read). */
  private fenceKey(fence: Fence | undefined): string {
    return this.leaseKey(fence?.lease ?? '-');
  }

  async holdLease(name: string, holder: string, ttlMs: number): Promise<number> {
    const result = await this.scripts().infergateLease(2, this.leaseKey(name), `${this.leaseKey(name)}:epoch`, holder, String(ttlMs));
    return Number(result);
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.scripts().infergateRelease(1, this.leaseKey(name), holder);
  }

  async publishReport(topic: string, publisher: string, body: string, ttlMs: number): Promise<void> {
    const key = `${this.prefix}:report:${topic}`;
    await this.scripts().infergatePublish(2, key, `${key}:expiry`, publisher, body, String(Math.max(1, Math.round(ttlMs))));
  }

  async readReports(topic: string): Promise<Map<string, string>> {
    const key = `${this.prefix}:report:${topic}`;
    const flat = (await this.scripts().infergateReadReports(2, key, `${key}:expiry`)) as unknown as string[];
    const out = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i]!, flat[i + 1]!);
    return out;
  }

  async get<K extends Kind>(kind: K, id: number): Promise<Versioned<RecordMap[K]> | undefined> {
    const raw = await this.client().hget(this.recKey(kind), String(id));
    return raw === null ? undefined : toVersioned<RecordMap[K]>(raw);
  }

  async list<K extends Kind>(kind: K): Promise<Versioned<RecordMap[K]>[]> {
    const all = await this.client().hgetall(this.recKey(kind));
    return Object.entries(all)
      .map(([id, raw]) => [Number(id), raw] as const)
      .sort(([a], [b]) => a - b)
      .map(([, raw]) => toVersioned<RecordMap[K]>(raw));
  }

  async lookup(index: string, key: string): Promise<{ kind: Kind; id: number } | undefined> {
    const ref = await this.client().hget(this.idxKey(index), key);
    return ref === null ? undefined : parseRef(ref);
  }

  async create<K extends Kind>(
    kind: K,
    build: (id: number) => RecordMap[K],
    options: CreateOptions = {},
  ): Promise<Versioned<RecordMap[K]>> {
    await this.eventsReady();
    // The id is drawn before the claim; a conflict just skips it (ids need not be dense).
    const id = await this.client().incr(this.seqKey(kind));
    const value = build(id);
    const unique = (options.unique ?? []).map(({ index, key }) => ({ index, key }));
    const envelope = JSON.stringify({ v: 1, u: unique, d: value } satisfies Envelope);
    const event = JSON.stringify({ kind, id, op: 'put', version: 1 } satisfies ChangeEvent);
    const [status, at] = await this.scripts().infergateCreate(
      2 + unique.length,
      this.recKey(kind),
      ...unique.map((u) => this.idxKey(u.index)),
      this.fenceKey(options.fence),
      String(id),
      envelope,
      this.channel(),
      event,
      `${kind}:${id}`,
      ...unique.map((u) => u.key),
      options.fence?.holder ?? '',
    );
    if (status === 'fenced' && options.fence) throw new FencedError(options.fence);
    if (status === 'conflict') {
      const taken = unique[(at ?? 1) - 1];
      throw new ConflictError(taken?.index ?? '?', taken?.key ?? '?');
    }
    if (status !== 'ok') throw new StoreError(`${kind} ${id} already exists in Redis: the id counter ${this.seqKey(kind)} is behind`);
    return { value: JSON.parse(JSON.stringify(value)) as RecordMap[K], version: 1 };
  }

  async update<K extends Kind>(
    kind: K,
    id: number,
    expectedVersion: number,
    value: RecordMap[K],
    options: WriteOptions = {},
  ): Promise<Versioned<RecordMap[K]>> {
    await this.eventsReady();
    const data = JSON.stringify(value);
    const [status, version] = await this.scripts().infergateUpdate(
      2,
      this.recKey(kind),
      this.fenceKey(options.fence),
      String(id),
      String(expectedVersion),
      data,
      this.channel(),
      kind,
      options.fence?.holder ?? '',
    );
    if (status === 'fenced' && options.fence) throw new FencedError(options.fence);
    if (status === 'missing') throw new NotFoundError(kind, id);
    if (status === 'stale') throw new VersionConflictError(kind, id);
    return { value: JSON.parse(data) as RecordMap[K], version: Number(version) };
  }

  async delete(kind: Kind, id: number, expectedVersion?: number, options: WriteOptions = {}): Promise<boolean> {
    await this.eventsReady();
    const [status] = await this.scripts().infergateDelete(
      3,
      this.recKey(kind),
      this.eventsKey(id),
      this.fenceKey(options.fence),
      String(id),
      expectedVersion === undefined ? '' : String(expectedVersion),
      this.channel(),
      kind,
      `${this.prefix}:idx:`,
      options.fence?.holder ?? '',
    );
    if (status === 'fenced' && options.fence) throw new FencedError(options.fence);
    if (status === 'stale') throw new VersionConflictError(kind, id);
    return status === 'ok';
  }

  async appendEvent(deploymentId: number, event: NewDeploymentEvent, options: WriteOptions = {}): Promise<boolean> {
    const [status] = await this.scripts().infergateAppendEvent(
      3,
      this.recKey('deployment'),
      this.eventsKey(deploymentId),
      this.fenceKey(options.fence),
      String(deploymentId),
      event.time,
      event.type,
      event.reason,
      event.message,
      String(EVENT_FOLD_WINDOW),
      String(EVENTS_PER_DEPLOYMENT),
      options.fence?.holder ?? '',
    );
    if (status === 'fenced' && options.fence) throw new FencedError(options.fence);
    return status === 'ok';
  }

  async listEvents(deploymentId: number): Promise<DeploymentEvent[]> {
    const raw = await this.client().lrange(this.eventsKey(deploymentId), 0, -1);
    return raw.map((text) => {
      const e = JSON.parse(text) as DeploymentEvent;
      return { time: e.time, first_time: e.first_time, type: e.type, reason: e.reason, message: e.message, count: e.count };
    });
  }

  watch(listener: ChangeListener): () => void {
    const wrapped: ChangeListener = (event) => listener(event);
    this.listeners.add(wrapped);
    this.ensureSubscribed();
    return () => {
      this.listeners.delete(wrapped);
    };
  }

  onResync(listener: () => void): () => void {
    const wrapped = () => listener();
    this.resyncListeners.add(wrapped);
    return () => {
      this.resyncListeners.delete(wrapped);
    };
  }

  /** Subscribes once, on a second connection: a subscribed connection cannot run commands. */
  private ensureSubscribed(): void {
    if (this.subscriber || !this.opened || !this.redis) return;
    // Its first SUBSCRIBE is sent while it connects, so this connection queues offline.
    const subscriber = this.redis.duplicate({ enableOfflineQueue: true });
    subscriber.on('error', (err: Error) => {
      this.lastError = err;
    });
    let connectedBefore = false;
    subscriber.on('ready', () => {
      if (!connectedBefore) {
        connectedBefore = true;
        return;
      }
      // Back after a cut: what was published meanwhile is lost. Subscribing again (harmless if
      // ioredis already did) orders the resync after the subscription is live, so nothing
      // committed after the watchers' re-read can be missed either; and the re-read runs on
      // the command connection, which reconnects on its own backoff: the resync waits for it
      // too, or a watcher's re-read would fail at once (no offline queue) and miss what was
      // written meanwhile.
      subscriber.subscribe(this.channel()).then(
        () => this.commandsReady().then(() => this.resync()),
        (err: unknown) => process.emitWarning(`Redis store cannot subscribe again to ${this.channel()}: ${reason(err)}`),
      );
    });
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel()) this.deliver(message);
    });
    this.subscriber = subscriber;
    this.subscribed = subscriber.subscribe(this.channel()).then(
      () => undefined,
      (err: unknown) => process.emitWarning(`Redis store cannot subscribe to ${this.channel()}: ${reason(err)}`),
    );
  }

  /** Our own writes issued after watch() must not be published before we listen. */
  private async eventsReady(): Promise<void> {
    await this.subscribed;
  }

  private deliver(message: string): void {
    const event = parseEvent(message);
    if (!event) return;
    for (const listener of [...this.listeners]) {
      try {
        listener({ ...event });
      } catch (err) {
        process.emitWarning(`store change listener threw: ${reason(err)}`);
      }
    }
  }

  /** Resolves once the command connection is ready (at once when it is). */
  private commandsReady(): Promise<void> {
    const redis = this.redis;
    if (!redis || redis.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => redis.once('ready', () => resolve()));
  }

  private resync(): void {
    for (const listener of [...this.resyncListeners]) {
      try {
        listener();
      } catch (err) {
        process.emitWarning(`store resync listener threw: ${reason(err)}`);
      }
    }
  }

  private client(): Redis {
    if (!this.guarded) throw new StoreError(`Redis store ${redactRedisUrl(this.url)} is not open`);
    return this.guarded;
  }

  private scripts(): ScriptCommands {
    return this.client() as unknown as ScriptCommands;
  }

  private recKey(kind: Kind): string {
    return `${this.prefix}:rec:${kind}`;
  }

  private idxKey(index: string): string {
    return `${this.prefix}:idx:${index}`;
  }

  /** A deployment's events list; the delete script is handed the one of the record's id, and deletes it only for a deployment. */
  private eventsKey(deploymentId: number): string {
    return `${this.prefix}:events:${deploymentId}`;
  }

  private seqKey(kind: Kind): string {
    return `${this.prefix}:seq:${kind}`;
  }

  private channel(): string {
    return `${this.prefix}:changes`;
  }
}

/** The URL as safe to print: the password is dropped. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//');
  }
}

/**
 * The client with every command's rejection passed through storeFailure, in one place rather
 * than around each command. Commands are called on the real client, so ioredis sees itself.
 */
function guard(redis: Redis): Redis {
  return new Proxy(redis, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof Promise ? result.catch((err: unknown) => Promise.reject(storeFailure(err))) : result;
      };
    },
  });
}

/**
 * A connection failure (refused, closed, timed out, Redis still loading) becomes
 * StoreUnavailableError; an error Redis answered with (a script's, a wrong type) stays what
 * it is: retrying would not help, so it must not read as an outage.
 */
function storeFailure(err: unknown): unknown {
  if (err instanceof StoreError) return err;
  if (err instanceof Error && err.name === 'ReplyError' && !UNAVAILABLE_REPLY.test(err.message)) return err;
  return new StoreUnavailableError(`the store (Redis) is unreachable: ${reason(err)}`);
}

function toVersioned<T>(raw: string): Versioned<T> {
  const env = JSON.parse(raw) as Envelope;
  return { value: env.d as T, version: env.v };
}

function parseRef(ref: string): { kind: Kind; id: number } | undefined {
  const at = ref.lastIndexOf(':');
  const kind = ref.slice(0, at);
  const id = Number(ref.slice(at + 1));
  return isKind(kind) && Number.isSafeInteger(id) ? { kind, id } : undefined;
}

/** Other processes share the channel; anything that is not a well-formed event is ignored. */
function parseEvent(message: string): ChangeEvent | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { kind, id, op, version } = raw as Record<string, unknown>;
  if (typeof kind !== 'string' || !isKind(kind)) return undefined;
  if (typeof id !== 'number' || typeof version !== 'number') return undefined;
  if (op !== 'put' && op !== 'delete') return undefined;
  return { kind, id, op, version };
}

function isKind(value: string): value is Kind {
  return (KINDS as readonly string[]).includes(value);
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
