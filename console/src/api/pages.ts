// Owns reading the control API's paged lists (docs/control-api.md, "Paged lists"): every page
// of a list, PAGE_SIZE items per request, following `continue` to the last page. The console
// reads whole lists — the deployments list is sorted by name and searched with the browser's
// find, and a credential names the deployments it serves by theirs — but never in one answer:
// each request stays small and quick however many deployments there are, and the first page
// tells how many remain, which the deployments list shows while it loads. A server from before
// paging ignores the parameters and answers the whole list at once.

import { api } from './client';
import type { ListPage } from './types';

export const PAGE_SIZE = 100;

/** How far a walk through a list has come: items read so far, and how many there are in all once the first page said. */
export interface Progress {
  loaded: number;
  total: number | null;
}

/** Every item of the list at `path`, a page at a time; `onPage` hears after each page. */
export async function allPages<T>(path: string, signal?: AbortSignal, onPage?: (p: Progress) => void): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  let total: number | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await api.get<ListPage<T>>(`${path}${sep}limit=${PAGE_SIZE}${next === undefined ? '' : `&continue=${encodeURIComponent(next)}`}`, signal);
    items.push(...page.items);
    total ??= items.length + (page.remaining_item_count ?? 0);
    onPage?.({ loaded: items.length, total });
    next = page.continue;
  } while (next !== undefined);
  return items;
}
