// Owns the client's saved logins: a JSON file in the XDG config directory
// ($XDG_CONFIG_HOME/infergate/config.json, else ~/.config/infergate/config.json, or the file
// INFERGATE_CONFIG names) holding named contexts — an API URL and a service-account key, or a
// person's session token with its refresh token (`infergate login --sso`) — and which one is
// current. The file is written atomically with mode 0600: it holds keys and tokens.
// Which API and key a command uses: --api/--key, else INFERGATE_API/INFERGATE_KEY, else the
// current (or --context) context. The project a command acts in: --project, else
// INFERGATE_PROJECT, else the context's `project` (`infergate context set-project`), else the
// caller's home project, which the API chooses.

import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from './errors.js';

export interface Context {
  api: string;
  /** A service-account key, or a person's session token (igs_…). */
  key: string;
  /** A person's sign-in: the refresh token (igr_…) that renews `key`, replaced at every refresh. */
  refresh_token?: string;
  /** When `key`, a session token, expires. */
  expires_at?: string;
  /** Who signed in (their e-mail address), for messages. */
  user?: string;
  /** The project commands act in (sent as X-Infergate-Project); absent: the caller's home project. */
  project?: string;
}

export interface ContextFile {
  current: string | null;
  contexts: Record<string, Context>;
}

export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.INFERGATE_CONFIG) return env.INFERGATE_CONFIG;
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'infergate', 'config.json');
}

export function readContexts(file: string): ContextFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { current: null, contexts: {} };
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<ContextFile>;
    return { current: parsed.current ?? null, contexts: parsed.contexts ?? {} };
  } catch {
    throw new UsageError(`${file} is not valid JSON; fix it or remove it and log in again`);
  }
}

export function writeContexts(file: string, contents: ContextFile): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(contents, null, 2) + '\n', { mode: 0o600 });
  renameSync(temp, file);
}

export interface Connection {
  api: string;
  key: string;
  /** The project to send as X-Infergate-Project; undefined: none (the API's home project). */
  project?: string;
  /** Where they came from, for messages. */
  source: string;
  /** A saved person's sign-in: the session is refreshed through it (session-refresh.ts). */
  session?: SavedSession;
}

/** Where a context's session lives, so a refresh can write the new tokens back. */
export interface SavedSession {
  file: string;
  context: string;
  refreshToken: string;
  expiresAt: string | null;
}

export interface ConnectionFlags {
  api?: string;
  key?: string;
  context?: string;
  project?: string;
}

/** The API and key to use: flags, then environment, then the saved context. */
export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Connection {
  const file = configPath(env);
  const saved = readContexts(file);
  const name = flags.context ?? saved.current;
  if (flags.context !== undefined && !saved.contexts[flags.context] && !(flags.api && flags.key)) {
    throw new UsageError(`no context "${flags.context}" in ${file} (infergate login --context ${flags.context} --api URL)`);
  }
  const context = name !== null ? saved.contexts[name] : undefined;
  // An empty variable counts as unset, as for the service's own INFERGATE_* settings.
  const api = flags.api || env.INFERGATE_API || context?.api;
  const key = flags.key || env.INFERGATE_KEY || context?.key;
  if (!api || !key) {
    throw new UsageError('not logged in: run `infergate login --api URL` (or pass --api and --key, or set INFERGATE_API and INFERGATE_KEY)');
  }
  // The saved session is refreshed only when its token is the one in use (no --key, no INFERGATE_KEY).
  const session: SavedSession | null =
    !(flags.key || env.INFERGATE_KEY) && name !== null && context?.refresh_token ? { file, context: name, refreshToken: context.refresh_token, expiresAt: context.expires_at ?? null } : null;
  const project = flags.project || env.INFERGATE_PROJECT || context?.project;
  return {
    api: api.replace(/\/+$/, ''),
    key,
    ...(project ? { project } : {}),
    source: flags.api || env.INFERGATE_API ? 'flags or environment' : `context ${name ?? ''} in ${file}`,
    ...(session ? { session } : {}),
  };
}
