// Owns every call the console makes to the control API: same origin, the service-account key
// from the tab's session as a Bearer credential (or a person's session cookie, with the
// X-CSRF-Token header on every call that changes something), JSON in and out, and the API's error shape
// ({"error": {code, message, field, details}}) turned into an ApiError the forms can place
// next to the field it names. A 401 signs the tab out.

import { session } from '../session';
import { projectHeader } from '../project';

export interface FieldProblem {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | undefined,
    readonly details: FieldProblem[],
  ) {
    super(message);
  }

  /** Every field-level problem: `details` when the API listed several, else the one field. */
  problems(): FieldProblem[] {
    if (this.details.length > 0) return this.details;
    return this.field ? [{ field: this.field, message: this.message }] : [];
  }
}

interface ErrorBody {
  error?: { code?: string; message?: string; field?: string; details?: FieldProblem[] };
}

function headers(extra: Record<string, string> = {}, method = 'GET'): Record<string, string> {
  const key = session.key();
  const csrf = session.csrf();
  const mutating = method !== 'GET' && method !== 'HEAD';
  // The project chosen in the header's switcher (project.ts) goes with every call.
  return { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(!key && csrf && mutating ? { 'x-csrf-token': csrf } : {}), ...projectHeader(), ...extra };
}

async function failure(res: Response): Promise<ApiError> {
  let body: ErrorBody = {};
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    // not JSON: keep the status line
  }
  const e = body.error ?? {};
  const err = new ApiError(res.status, e.code ?? 'http_error', e.message ?? `${res.status} ${res.statusText}`, e.field, e.details ?? []);
  if (res.status === 401 && session.signedIn()) session.signOut(err.message);
  return err;
}

export async function request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }, method),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'unreachable', 'the control API does not answer; is infergate serve running?', undefined, []);
  }
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const api = {
  get: <T>(path: string, signal?: AbortSignal) => request<T>('GET', path, undefined, signal),
  post: <T>(path: string, body?: unknown) => request<T>('POST', path, body ?? {}),
  patch: <T>(path: string, body: unknown) => request<T>('PATCH', path, body),
  put: <T>(path: string, body: unknown) => request<T>('PUT', path, body),
  del: <T>(path: string) => request<T>('DELETE', path),
};

/** A streamed GET (Server-Sent Events over fetch, so the credential goes in a header). */
export async function openStream(path: string, signal: AbortSignal): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  const res = await fetch(path, { headers: headers({ accept: 'text/event-stream' }), signal });
  if (!res.ok) throw await failure(res);
  if (!res.body) throw new ApiError(0, 'no_body', 'the stream has no body', undefined, []);
  return res.body.getReader();
}

/**
 * Fetches a file with the credential and hands it to the browser as a download, under the name
 * the answer gives, else `fallbackName`; `saveAs` forces a name (the one a snippet reads).
 */
export async function download(path: string, fallbackName: string, saveAs?: string): Promise<void> {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw await failure(res);
  const disposition = res.headers.get('content-disposition') ?? '';
  const name = saveAs ?? /filename="([^"]+)"/.exec(disposition)?.[1] ?? fallbackName;
  saveBlob(await res.blob(), name);
}

export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Ends a person's session at the server (the cookie is cleared there), then the tab's state. */
export async function signOutEverywhere(): Promise<void> {
  if (!session.key() && session.csrf()) await request('POST', '/auth/logout', {}).catch(() => undefined);
  session.signOut();
}

/** The WebSocket subprotocols that carry the credential: the key's entry, none for a cookie session (the browser sends the cookie). */
export function websocketProtocols(): string[] {
  return session.key() ? [websocketBearer()] : [];
}

/** The key as a WebSocket subprotocol entry: browsers cannot set Authorization on a WebSocket. */
export function websocketBearer(): string {
  const key = session.key() ?? '';
  const b64 = btoa(String.fromCharCode(...new TextEncoder().encode(key)));
  return `base64url.bearer.infergate.${b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`;
}
