// Owns `infergate login --sso`: a person signs in through the service's identity provider
// with the device authorization grant. The service starts it (POST /auth/device), the CLI
// prints the link and the code to confirm in a browser, then polls POST /auth/device/token at
// the interval given (slower when told to slow down) until the person has confirmed, and
// hands back the session and refresh tokens to save in the context.

import type { DeviceView } from '../domain/api-views.js';
import { ApiRefusal, UsageError } from './errors.js';
import type { Requester } from './http-request.js';

/** What POST /auth/device answers. */
type DeviceStart = DeviceView;

export interface SsoSession {
  session_token: string;
  refresh_token: string;
  expires_at: string;
  user: { id: number; email: string | null; name: string | null; groups: string[] };
}

const REQUEST_TIMEOUT_MS = 30_000;

async function post(request: Requester, url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as Record<string, unknown> };
  } catch {
    return { status: res.status, body: { error: { code: 'error', message: `the control API answered ${res.status}` } } };
  }
}

function errorOf(body: Record<string, unknown>): { code: string; message: string } {
  const e = body.error as { code?: string; message?: string } | undefined;
  return { code: e?.code ?? 'error', message: e?.message ?? 'the control API refused' };
}

/** Runs the device grant through the service at `api`; `say` prints the instructions. */
export async function ssoLogin(api: string, request: Requester, say: (line: string) => void, sleep: (ms: number) => Promise<void>): Promise<SsoSession> {
  const started = await post(request, `${api}/auth/device`, {});
  if (started.status !== 200) {
    const e = errorOf(started.body);
    if (started.status === 404) throw new UsageError(`${api} does not sign people in: ${e.message}`);
    throw new ApiRefusal(started.status, e.code, e.message, null);
  }
  const device = started.body as unknown as DeviceStart;
  say(`To sign in, open ${device.verification_uri_complete ?? device.verification_uri} in a browser and confirm the code ${device.user_code}`);
  say(`(or open ${device.verification_uri} and enter the code). Waiting for you to confirm…`);
  let intervalMs = Math.max(1, device.interval) * 1000;
  const deadline = Date.now() + device.expires_in * 1000;
  while (Date.now() < deadline) {
    await sleep(intervalMs);
    const poll = await post(request, `${api}/auth/device/token`, { device_code: device.device_code });
    if (poll.status === 200) return poll.body as unknown as SsoSession;
    const e = errorOf(poll.body);
    if (e.code === 'authorization_pending') continue;
    // RFC 8628: slow_down adds five seconds to the interval, for this and every later poll.
    if (e.code === 'slow_down') {
      intervalMs += 5000;
      continue;
    }
    if (e.code === 'expired_token') break;
    if (e.code === 'access_denied') throw new ApiRefusal(poll.status, e.code, 'the sign-in was refused at the identity provider', null);
    throw new ApiRefusal(poll.status, e.code, e.message, null);
  }
  throw new ApiRefusal(400, 'expired_token', 'the code expired before it was confirmed: run infergate login --sso again', null);
}
