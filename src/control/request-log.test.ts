// The request log's view of a URL: path and parameter names kept, every value replaced.

import { describe, expect, it } from 'vitest';
import { redactQuery } from './request-log.js';

describe('redactQuery', () => {
  it.each([
    ['/deployments/general/1/logs?tail=10&follow=true', '/deployments/general/1/logs?tail=[redacted]&follow=[redacted]'],
    ['/deployments/general', '/deployments/general'],
    ['/x?flag', '/x?flag'],
    ['/x?a=1&a=2&b=', '/x?a=[redacted]&a=[redacted]&b=[redacted]'],
    ['/x?token=a=b=c', '/x?token=[redacted]'],
    ['/x?', '/x?'],
  ])('%s → %s', (url, logged) => {
    expect(redactQuery(url)).toBe(logged);
  });
});
