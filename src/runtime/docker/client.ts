// Owns how infergate reaches a Docker Engine: a Dockerode client for the endpoint the
// environment names (DOCKER_HOST, as the docker CLI reads it, or the default socket), and a
// bounded "does a daemon answer here?" check whose refusal names the endpoint it tried.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

/**
 * A client for the daemon `env` names. Dockerode reads process.env itself; the options are
 * spelled out here so that a caller's own environment (a test's, a config file's) wins, and so
 * that the endpoint is always a plain value the refusals below can name.
 */
export function dockerClient(env: NodeJS.ProcessEnv = process.env): Dockerode {
  return new Dockerode(connectionOptions(env));
}

export type DockerAnswer = { ok: true; version: string } | { ok: false; reason: string };

/** Whether a daemon answers a ping and a version request within `timeoutMs`; never throws. */
export async function dockerAnswers(docker: Dockerode, timeoutMs = 2000): Promise<DockerAnswer> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  // The typings omit the options that dockerode 4's ping and version take; the abort is what
  // bounds a daemon that accepts the connection and never answers.
  const daemon = docker as unknown as AbortableDaemon;
  try {
    await daemon.ping({ abortSignal: abort.signal });
    const version = await daemon.version({ abortSignal: abort.signal });
    return { ok: true, version: version.Version };
  } catch (err) {
    const why = abort.signal.aborted ? `no answer within ${timeoutMs} ms` : err instanceof Error ? err.message : String(err);
    return { ok: false, reason: `no Docker daemon answers at ${dockerEndpoint(docker)} (${why}); set DOCKER_HOST to use another one` };
  } finally {
    clearTimeout(timer);
  }
}

/** The endpoint a client talks to, as DOCKER_HOST would spell it. */
export function dockerEndpoint(docker: Dockerode): string {
  const modem = docker.modem as unknown as ModemEndpoint;
  if (typeof modem.socketPath === 'string') return `unix://${modem.socketPath}`;
  if (modem.host !== undefined) return `${modem.protocol ?? 'http'}://${modem.host}${modem.port ? `:${modem.port}` : ''}`;
  // Dockerode's own default (new Dockerode() without DOCKER_HOST) resolves the socket lazily.
  return `unix://${DEFAULT_DOCKER_SOCKET}`;
}

interface AbortableDaemon {
  ping(opts: { abortSignal: AbortSignal }): Promise<unknown>;
  version(opts: { abortSignal: AbortSignal }): Promise<Dockerode.DockerVersion>;
}

interface ModemEndpoint {
  socketPath?: unknown;
  host?: string;
  port?: string | number;
  protocol?: string;
}

function connectionOptions(env: NodeJS.ProcessEnv): Dockerode.DockerOptions {
  // Every endpoint field is set, undefined included: Dockerode merges these over what it reads
  // from process.env, which must not leak a DOCKER_HOST the caller's env does not have.
  const none = { socketPath: undefined, host: undefined, port: undefined, protocol: undefined } as const;
  const value = env.DOCKER_HOST?.trim();
  if (!value) return { ...none, socketPath: DEFAULT_DOCKER_SOCKET };
  if (value.startsWith('unix://')) return { ...none, socketPath: value.slice('unix://'.length) || DEFAULT_DOCKER_SOCKET };
  const url = parseHostUrl(value);
  if (url.protocol === 'ssh:') {
    return { ...none, protocol: 'ssh', host: url.hostname, port: url.port || 22, username: url.username || undefined, sshOptions: { agent: env.SSH_AUTH_SOCK } };
  }
  if (url.protocol !== 'tcp:' && url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`DOCKER_HOST=${value}: expected unix://, tcp:// or ssh://`);
  }
  const tls = env.DOCKER_TLS_VERIFY === '1' || url.port === '2376' || url.protocol === 'https:';
  return { ...none, protocol: tls ? 'https' : 'http', host: url.hostname, port: url.port || (tls ? 2376 : 2375), ...tlsFiles(env) };
}

function parseHostUrl(value: string): URL {
  try {
    return new URL(value.includes('://') ? value : `tcp://${value}`);
  } catch {
    throw new Error(`DOCKER_HOST=${value} is not an address (unix:///path, tcp://host:port or ssh://user@host)`);
  }
}

/** The client certificate the docker CLI would use, when DOCKER_CERT_PATH names one. */
function tlsFiles(env: NodeJS.ProcessEnv): Pick<Dockerode.DockerOptions, 'ca' | 'cert' | 'key'> {
  const dir = env.DOCKER_CERT_PATH;
  if (!dir) return {};
  return {
    ca: readFileSync(path.join(dir, 'ca.pem')),
    cert: readFileSync(path.join(dir, 'cert.pem')),
    key: readFileSync(path.join(dir, 'key.pem')),
  };
}
