// Owns the list table of the resource pages (vault tokens, registry credentials, certificates,
// service accounts): a labelled table with a header cell per column, one row per item, and the
// row's actions last under a visually quiet "Actions" header. While the list loads it says so;
// when it is empty it shows the page's empty state (what the list is for and how to start)
// instead of bare headers.

import type { ReactNode } from 'react';
import { EmptyState, type EmptyProps } from './empty-state';

export interface ResourceColumn<T> {
  header: string;
  cell: (item: T) => ReactNode;
}

export function ResourceTable<T extends { id: number; name: string }>({
  label,
  columns,
  items,
  rowKey,
  actions,
  empty,
}: {
  /** The table's accessible name. */
  label: string;
  columns: readonly ResourceColumn<T>[];
  /** null while the list loads. */
  items: readonly T[] | null;
  /** The row's `data-*` attribute naming the item, for tests and styling: `token` gives data-token="<name>". */
  rowKey: string;
  actions: (item: T) => ReactNode;
  /** What an empty list says, and the action that fills it. */
  empty: EmptyProps;
}) {
  if (items === null) return <p className="subtle">Loading…</p>;
  if (items.length === 0) return <EmptyState {...empty} />;
  return (
    <div className="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.header}>
                {c.header}
              </th>
            ))}
            <th scope="col">
              <span className="subtle">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {items.map((item) => (
            <tr key={item.id} {...{ [`data-${rowKey}`]: item.name }}>
              {columns.map((c) => (
                <td key={c.header}>{c.cell(item)}</td>
              ))}
              <td>{actions(item)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
