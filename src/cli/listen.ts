// Owns binding a listener with an error a person can act on: an occupied port or a
// privileged port without the right to bind it ends start-up with one line naming the flag.
// Before anything is written, every port of a start is tried at once (checkPorts), so a
// first start never half-happens and all busy ports are named together.

import { createServer, type Server } from 'node:net';

export class ListenError extends Error {
  override name = 'ListenError';
}

export async function listen(server: Server, host: string, port: number, flag: string, what: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(explain(err, host, port, flag, what));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}

/** A port a process is about to bind: its address, the flag that sets it, what it serves. */
export interface PlannedListener {
  host: string;
  port: number;
  flag: string;
  what: string;
}

/**
 * Binds and releases each planned port (0 means any, always free) and throws one ListenError
 * naming every port that cannot be bound, one per line. A port can still be taken between
 * this check and the real bind; the later bind reports that, and start-up writes nothing
 * before its listeners are up.
 */
export async function checkPorts(planned: readonly PlannedListener[]): Promise<void> {
  const problems: string[] = [];
  const seen = new Map<number, PlannedListener>();
  for (const p of planned) {
    if (p.port === 0) continue;
    const twice = seen.get(p.port);
    if (twice !== undefined) {
      problems.push(`${p.what}: port ${p.port} is also the ${twice.what}'s (--${twice.flag}); choose another with --${p.flag}`);
      continue;
    }
    seen.set(p.port, p);
    const probe = createServer();
    try {
      await listen(probe, p.host, p.port, p.flag, p.what);
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
  if (problems.length === 1) throw new ListenError(problems[0]!);
  if (problems.length > 1) throw new ListenError(`${problems.length} ports cannot be bound:\n  ${problems.join('\n  ')}`);
}

function explain(err: NodeJS.ErrnoException, host: string, port: number, flag: string, what: string): Error {
  if (err.code === 'EADDRINUSE') {
    return new ListenError(`${what}: port ${port} on ${host} is already in use; stop what holds it or choose another with --${flag}`);
  }
  if (err.code === 'EACCES') {
    return new ListenError(
      `${what}: no permission to bind port ${port} on ${host}; ports below 1024 need root or CAP_NET_BIND_SERVICE ` +
        `(setcap cap_net_bind_service=+ep $(command -v node)), or choose another with --${flag}`,
    );
  }
  if (err.code === 'EADDRNOTAVAIL') {
    return new ListenError(`${what}: address ${host} is not available on this machine; fix --${flag.replace('port', 'host')}`);
  }
  return new ListenError(`${what}: cannot listen on ${host}:${port}: ${err.message}`);
}
