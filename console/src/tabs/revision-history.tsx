// Owns the Overview's revision history: every revision newest first with its status, its share
// of the traffic, its tags and their hosts, why it was made and why it failed; and the traffic
// actions on a revision — "Send 10 %" (a canary), "Promote" (100 %), and on a revision of the
// current split "Roll back" (100 % to the revision that served before it). Each one confirms
// with what will happen (forms/traffic says it), then PATCHes the whole `traffic` list.

import { useState } from 'react';
import { api, ApiError } from '../api/client';
import type { Deployment, RevisionSummary } from '../api/types';
import { ConfirmDialog } from '../components/confirm';
import { CopyButton } from '../components/copy';
import { FormError } from '../components/form';
import { inLabels } from '../forms/labels';
import { canaryList, promoteList, rollbackList, rollbackTarget, sharesOf, splitWords, trafficChangeWords, type TrafficWire } from '../forms/traffic';

const CANARY_PERCENT = 10;

interface Pending {
  title: string;
  confirm: string;
  list: TrafficWire[];
}

export function RevisionHistory({ d, onChanged }: { d: Deployment; onChanged: () => void }) {
  const [pending, setPending] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const shares = sharesOf(d);
  const back = rollbackTarget(d);
  const percentOf = (r: RevisionSummary) => r.percent ?? shares.find((s) => s.revision === r.revision)?.percent ?? 0;
  const tagsOf = (r: RevisionSummary) => r.tags ?? shares.find((s) => s.revision === r.revision)?.tags ?? [];
  const urlOf = (tag: string) => d.traffic?.find((t) => t.tag === tag)?.url ?? null;
  const inSplit = new Set(shares.filter((s) => s.percent > 0).map((s) => s.revision));

  const ask = (p: Pending) => {
    setError(null);
    setDone(null);
    setPending(p);
  };

  const run = async () => {
    if (!pending) return;
    setBusy(true);
    try {
      const after = await api.patch<Deployment>(`/deployments/${d.family}/${d.id}`, { traffic: pending.list });
      setDone(`Traffic saved: ${splitWords(sharesOf(after))}.`);
      setPending(null);
      onChanged();
    } catch (err) {
      setPending(null);
      setError(err instanceof ApiError ? inLabels(err.message) : err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="revisions-heading">
      <h2 id="revisions-heading">Revision history</h2>
      <FormError message={error} />
      {done && <p className="notice">{done}</p>}
      <div className="table-wrap">
        <table aria-label="Revision history">
          <thead>
            <tr>
              <th scope="col">Revision</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">Traffic</th>
              <th scope="col">Tags</th>
              <th scope="col">Reason</th>
              <th scope="col">Created</th>
              <th scope="col">Failure</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {[...d.revisions].reverse().map((r) => {
              const percent = percentOf(r);
              const tags = tagsOf(r);
              const usable = r.status !== 'failed';
              return (
                <tr key={r.revision} data-revision={r.revision}>
                  <td>
                    {r.revision}
                    {r.revision === d.serving_revision ? <span className="subtle"> (serving)</span> : null}
                    {r.revision === d.revision ? <span className="subtle"> (newest)</span> : null}
                  </td>
                  <td>{r.status}</td>
                  <td className="num" data-testid="revision-percent">
                    {percent} %
                  </td>
                  <td>
                    {tags.length === 0
                      ? ''
                      : tags.map((tag) => {
                          const url = urlOf(tag);
                          return (
                            <div key={tag} className="tag-line">
                              <span className="tag">{tag}</span>
                              {url && (
                                <>
                                  {' '}
                                  <code>{url}</code> <CopyButton value={url} label="Copy URL" />
                                </>
                              )}
                            </div>
                          );
                        })}
                  </td>
                  <td>
                    {r.reason}
                    {r.source_revision !== null ? ` of ${r.source_revision}` : ''}
                  </td>
                  <td>{new Date(r.created_at).toLocaleString()}</td>
                  <td>{r.failure_reason ?? ''}</td>
                  <td className="actions-cell">
                    {usable && percent === 0 && (
                      <button
                        type="button"
                        className="button small"
                        aria-label={`Send ${CANARY_PERCENT} % to revision ${r.revision}`}
                        onClick={() => ask({ title: `Send ${CANARY_PERCENT} % to revision ${r.revision}?`, confirm: `Send ${CANARY_PERCENT} %`, list: canaryList(d, r.revision, CANARY_PERCENT) })}
                      >
                        Send {CANARY_PERCENT} %
                      </button>
                    )}
                    {usable && percent < 100 && (
                      <button
                        type="button"
                        className="button small"
                        aria-label={`Promote revision ${r.revision}`}
                        onClick={() => ask({ title: `Promote revision ${r.revision}?`, confirm: 'Promote', list: promoteList(d, r.revision) })}
                      >
                        Promote
                      </button>
                    )}
                    {back !== null && r.revision !== back && inSplit.has(r.revision) && (
                      <button
                        type="button"
                        className="button small"
                        aria-label={`Roll back to revision ${back}`}
                        onClick={() => ask({ title: `Roll back to revision ${back}?`, confirm: 'Roll back', list: rollbackList(d, back) })}
                      >
                        Roll back
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {pending && (
        <ConfirmDialog open title={pending.title} confirmLabel={pending.confirm} busy={busy} onConfirm={() => void run()} onCancel={() => setPending(null)}>
          <p>{trafficChangeWords(d, pending.list)}</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
