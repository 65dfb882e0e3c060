// What each refusal below the routes is answered with: the status and code of every parser
// error class (the raw-socket tests in test/security/ cover 431 and 400 end to end; a
// request timeout needs a connection held for Node's 30 s check interval, so it is here).

import { describe, expect, it } from 'vitest';
import { clientErrorAnswer } from './http-edge.js';

const error = (code: string, reason?: string) => Object.assign(new Error(`Parse Error: ${reason ?? code}`), { code, reason });

describe('clientErrorAnswer', () => {
  it.each([
    ['HPE_HEADER_OVERFLOW', 431, 'headers_too_large'],
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'request_timeout'],
    ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 413, 'payload_too_large'],
    ['HPE_INVALID_METHOD', 400, 'invalid_request'],
    ['HPE_INVALID_HEADER_TOKEN', 400, 'invalid_request'],
  ])('%s → %i %s', (code, status, errorCode) => {
    const answer = clientErrorAnswer(error(code));
    expect(answer.status).toBe(status);
    expect(answer.toBody()).toEqual({ error: { code: errorCode, message: expect.any(String) } });
  });

  it('names the header limit it enforces', () => {
    expect(clientErrorAnswer(error('HPE_HEADER_OVERFLOW'), 32 * 1024).message).toContain('32 KiB');
  });

  it("says what the parser found, never the request's bytes", () => {
    const answer = clientErrorAnswer(Object.assign(error('HPE_INVALID_HEADER_TOKEN', 'Invalid header token'), { rawPacket: Buffer.from('secret') }));
    expect(answer.message).toBe('malformed HTTP request (HPE_INVALID_HEADER_TOKEN): Invalid header token');
  });
});
