// Owns binding a listener with an error a person can act on: an occupied port or a
// privileged port without the right to bind it ends start-up with one line naming the flag.

import type { Server } from 'node:net';

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
