// Test helper: a free TCP port on loopback for a process a test starts.
//
// Ports come from below the kernel's ephemeral range (32768–60999 by default), never from it:
// a port found by binding port 0 and closing it is in that range, and before the test's
// process binds it the kernel may hand it out again, as the source port of any outgoing
// connection or to a replica binding port 0 — which happened in CI ("port … is already in
// use"). Each vitest worker takes its own slice of 20000–31999 (by VITEST_POOL_ID), starts at a
// random place in it, never hands a port out twice, and checks each port by binding it.

import net from 'node:net';

const LOW = 20_000;
const HIGH = 32_000;
const SLICES = 8;
const SLICE = Math.floor((HIGH - LOW) / SLICES);

const poolId = Number(process.env.VITEST_POOL_ID ?? '1');
const sliceStart = LOW + ((Number.isInteger(poolId) && poolId > 0 ? poolId - 1 : 0) % SLICES) * SLICE;
let next = Math.floor(Math.random() * SLICE);
const handedOut = new Set<number>();

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let tried = 0; tried < SLICE; tried++) {
    const port = sliceStart + (next++ % SLICE);
    if (handedOut.has(port)) continue;
    // Some processes listen on every interface: the port must be free on both.
    if ((await bindable(port, '127.0.0.1')) && (await bindable(port, '0.0.0.0'))) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${sliceStart}–${sliceStart + SLICE - 1}`);
}
