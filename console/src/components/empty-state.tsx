// Owns what a page shows where a list has nothing yet: a short title, one sentence saying what
// the list is for and how to start, and the action that starts it, instead of bare headers.

import type { ReactNode } from 'react';

export interface EmptyProps {
  title: string;
  /** One sentence: what goes here and how to get the first one. */
  children: ReactNode;
  /** The buttons or links that start it. */
  action?: ReactNode;
}

export function EmptyState({ title, children, action }: EmptyProps) {
  return (
    <div className="empty" data-testid="empty-state">
      <h2>{title}</h2>
      <p>{children}</p>
      {action && <div className="empty-actions">{action}</div>}
    </div>
  );
}

/** For an empty state on a page whose create form is above the list: takes the keyboard (and the eye) to the form's first field. */
export function focusForm(formId: string): void {
  const el = document.getElementById(formId)?.querySelector<HTMLElement>('input, select, textarea');
  el?.scrollIntoView({ block: 'center' });
  el?.focus();
}
