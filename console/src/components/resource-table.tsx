// Owns the list table of the credential pages (vault tokens, registry credentials): a labelled
// table with a header cell per column, one row per item, and the row's actions last under a
// visually quiet "Actions" header.

import type { ReactNode } from 'react';

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
}: {
  /** The table's accessible name. */
  label: string;
  columns: readonly ResourceColumn<T>[];
  items: readonly T[];
  /** The row's `data-*` attribute naming the item, for tests and styling: `token` gives data-token="<name>". */
  rowKey: string;
  actions: (item: T) => ReactNode;
}) {
  return (
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
  );
}
