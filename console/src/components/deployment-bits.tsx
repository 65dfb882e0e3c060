// Owns the small views of a deployment shared by the list and the detail: components as
// ready/desired, the endpoint URL with its copy button (and in the detail the path address,
// which needs no DNS for the endpoint's host), the revision pair, the progress line.

import type { Deployment } from '../api/types';
import { CopyButton } from './copy';

export function endpointUrl(d: Deployment): string {
  return `https://${d.endpoint_url}`;
}

export function Components({ d }: { d: Deployment }) {
  const entries = Object.entries(d.components);
  if (entries.length === 0) return <span className="subtle">none</span>;
  return (
    <span className="components">
      {entries.map(([name, c]) => (
        <span key={name} data-component={name}>
          {name} {c.ready}/{c.desired}
        </span>
      ))}
    </span>
  );
}

export function Endpoint({ d, withPath = false }: { d: Deployment; withPath?: boolean }) {
  const url = endpointUrl(d);
  const path = withPath ? d.endpoint_path_url : null;
  return (
    <span className="endpoint">
      <code>{url}</code>
      <CopyButton value={url} label="Copy URL" />
      {path ? (
        <>
          <span className="subtle"> or, with no DNS for that host, </span>
          <code>{path}</code>
          <CopyButton value={path} label="Copy path URL" />
        </>
      ) : null}
    </span>
  );
}

export function Revisions({ d }: { d: Deployment }) {
  return (
    <span title="current revision / serving revision">
      {d.revision}
      {d.serving_revision !== null && d.serving_revision !== d.revision ? <span className="subtle"> (serving {d.serving_revision})</span> : d.serving_revision === null ? <span className="subtle"> (none serving)</span> : null}
    </span>
  );
}

/** What a long wait is waiting for, in words: rollout, scale-from-zero, loading. */
export function progressLine(d: Deployment): string | null {
  if (d.status === 'deleting') return 'Deleting: replicas are draining';
  if (d.paused) return null;
  const ready = Object.values(d.components).reduce((n, c) => n + c.ready, 0);
  const desired = Object.values(d.components).reduce((n, c) => n + c.desired, 0);
  if (d.rollout?.state === 'in_progress') {
    return `Rolling out revision ${d.rollout.revision}${d.rollout.from_revision ? ` (from ${d.rollout.from_revision})` : ''}: replicas ready ${ready}/${desired}`;
  }
  if (d.status === 'pending') return `Starting: replicas ready ${ready}/${desired} (loading the model)`;
  if (d.status === 'ready' && desired === 0) return 'Scaled to zero: the next request wakes it';
  if (d.status === 'not_ready') return `Not ready: replicas ready ${ready}/${desired}`;
  return null;
}
