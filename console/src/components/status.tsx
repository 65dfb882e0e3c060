// Owns how a status reads: a word and a colour, never colour alone (ready green, pending and
// not ready amber, failed and failing red — a replica crash-looping is not on its way, unlike
// pending — paused grey), and the reason in words beside it when the controller gives one
// ("Pulling 127.0.0.1:5000/team/engine:v1: 45%", a crash-looping replica and its last log line).

import type { Status } from '../api/types';
import { statusReasonText } from './status-reason';

const WORDS: Record<Status, string> = {
  pending: 'Pending',
  ready: 'Ready',
  not_ready: 'Not ready',
  paused: 'Paused',
  failed: 'Failed',
  failing: 'Failing',
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

/** Why the deployment is not ready (or not all its replicas are), as a muted line; nothing when there is no reason. */
export function StatusReason({ reason, className }: { reason: string | null | undefined; className?: string }) {
  const text = statusReasonText(reason);
  if (text === null) return null;
  return (
    <span className={className ? `status-reason ${className}` : 'status-reason'} data-testid="status-reason">
      {text}
    </span>
  );
}
