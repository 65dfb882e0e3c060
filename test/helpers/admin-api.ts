// Test helper: the one client tests use to call a control API — as the admin by default —
// with JSON in and the status, headers and parsed body out (the raw text when the answer is
// not JSON, undefined when it is empty).

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- test convenience: tests read fields of many views
}

/** One call to the API at `baseUrl`; `key` null sends no credentials; `project`, when given, is sent as X-Infergate-Project. */
export async function apiCall(baseUrl: string, key: string | null, method: string, route: string, body?: unknown, project?: string): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (project !== undefined) headers['x-infergate-project'] = project;
  let payload: string | undefined;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const res = await fetch(baseUrl + route, { method, headers, body: payload });
  const text = await res.text();
  let parsed: unknown = undefined;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

export type AdminCall = (method: string, route: string, body?: unknown) => Promise<ApiResponse>;

/** Calls bound to one API and key; `baseUrl` is read at each call (a standby's, once it took over). */
export function adminCaller(baseUrl: string | (() => string), key: string): AdminCall {
  return (method, route, body) => apiCall(typeof baseUrl === 'string' ? baseUrl : baseUrl(), key, method, route, body);
}
