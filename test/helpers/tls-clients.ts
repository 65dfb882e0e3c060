// Test helper: clients that reach the gateway on 127.0.0.1 under an endpoint hostname, the
// way a real client reaches <name>.<domain>: the name in SNI and Host, the platform CA as the
// only trust anchor, optionally a client certificate. Used by the openai SDK (its `fetch`
// option) and by tests that need raw streams.

import { Agent, fetch as undiciFetch } from 'undici';
import type { LookupFunction } from 'node:net';
import { ADMIN_KEY, type TestControl } from './control.js';

/** Resolves every name to 127.0.0.1, so endpoint hostnames reach the local gateway. */
export const loopbackLookup: LookupFunction = (_host, options, cb) => {
  if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
};

export interface ClientTls {
  ca: string;
  /** A client certificate and key in one PEM (the file GET /certificates/{id}/pem returns). */
  pem?: string;
}

export function gatewayAgent(tls: ClientTls): Agent {
  return new Agent({
    connect: { ca: tls.ca, cert: tls.pem, key: tls.pem, lookup: loopbackLookup },
  });
}

/** A fetch for the openai SDK's `fetch` option. */
export function gatewayFetch(tls: ClientTls): typeof globalThis.fetch {
  const dispatcher = gatewayAgent(tls);
  return ((input: string | URL, init?: Record<string, unknown>) =>
    undiciFetch(input as string, { ...(init ?? {}), dispatcher } as Parameters<typeof undiciFetch>[1])) as unknown as typeof globalThis.fetch;
}

/** Downloads a client certificate's .pem through the control API. */
export async function downloadPem(api: TestControl, certificateId: number): Promise<string> {
  const res = await api.call('GET', `/certificates/${certificateId}/pem`);
  if (res.status !== 200 || typeof res.body !== 'string') throw new Error(`pem ${certificateId}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
