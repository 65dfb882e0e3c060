// Owns how a status reads: a word and a colour, never colour alone (ready green, pending and
// not ready amber, failed red, paused grey).

import type { Status } from '../api/types';

const WORDS: Record<Status, string> = {
  pending: 'Pending',
  ready: 'Ready',
  not_ready: 'Not ready',
  paused: 'Paused',
  failed: 'Failed',
  deleting: 'Deleting',
};

export function statusWord(status: Status): string {
  return WORDS[status] ?? status;
}

export function StatusBadge({ status }: { status: Status }) {
  return (
    <span className={`status status-${status}`} data-status={status}>
      <span className="status-dot" aria-hidden="true" />
      {statusWord(status)}
    </span>
  );
}
