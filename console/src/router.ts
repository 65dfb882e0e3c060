// Owns navigation: hash routes (#/deployments/general/3/logs), so the control API needs no
// fallback route for the console's pages and its own paths stay unambiguous.

import { useEffect, useState } from 'react';

export function currentPath(): string {
  const h = window.location.hash.replace(/^#/, '');
  return h.startsWith('/') ? h : '/deployments';
}

export function navigate(path: string): void {
  window.location.hash = path;
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const on = () => setPath(currentPath());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return path;
}

/** Matches `/a/:x/b` against a path; the named parts, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const s = path.split('?')[0]!.split('/');
  if (p.length !== s.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const want = p[i]!;
    const got = s[i]!;
    if (want.startsWith(':')) out[want.slice(1)] = decodeURIComponent(got);
    else if (want !== got) return null;
  }
  return out;
}
