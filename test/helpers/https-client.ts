// Test helper: an HTTPS request to the gateway on 127.0.0.1 for a given endpoint hostname,
// trusting only the platform CA and sending the hostname as SNI and Host.

import https from 'node:https';

export interface HttpsResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function httpsRequest(opts: {
  port: number;
  host: string;
  ca: string;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Client certificate and key, e.g. both from one .pem. */
  cert?: string;
  key?: string;
  /** SNI when it differs from `host`; null sends none. */
  servername?: string | null;
  /** false: accept the server's certificate whatever name it carries (an unknown SNI gets the default one). */
  checkIdentity?: boolean;
}): Promise<HttpsResult> {
  const servername = opts.servername === undefined ? opts.host : opts.servername;
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: opts.port,
        // '' sends no SNI; a name the server has no certificate for gets its default one.
        servername: servername ?? '',
        ...(opts.checkIdentity === false ? { checkServerIdentity: () => undefined } : {}),
        method: opts.method ?? 'GET',
        path: opts.path ?? '/',
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        headers: { host: opts.host, ...opts.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}
