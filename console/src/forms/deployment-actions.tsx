// Owns the whole-deployment actions of the Settings tab: Pause or Resume, Roll back to an
// earlier revision, Clone under a new name, Delete. Each button is named by its action and
// opens a confirmation stating the consequence; the API's refusal is shown as it says it.
// Only one confirmation is mounted at a time (the dialog's title id is fixed).

import { useState } from 'react';
import { api, ApiError } from '../api/client';
import type { Deployment } from '../api/types';
import { ConfirmDialog } from '../components/confirm';
import { FormError, toProblems, type Problems } from '../components/form';
import { navigate } from '../router';
import { Select, TextInput } from './inputs';
import { inLabels, labelledProblems } from './labels';
import { nameProblem } from './rules';

type Action = 'pause' | 'resume' | 'rollback' | 'clone' | 'delete';

/** The clone's name field is the new deployment's name. */
const CLONE_LABELS = { name: 'New name' };

const TITLES: Record<Action, string> = {
  pause: 'Pause',
  resume: 'Resume',
  rollback: 'Roll back',
  clone: 'Clone',
  delete: 'Delete',
};

export function DeploymentActions({ d, onChanged, canClone }: { d: Deployment; onChanged: () => void; canClone: boolean }) {
  const [pending, setPending] = useState<Action | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [revisionChoice, setRevisionChoice] = useState('');
  const [cloneName, setCloneName] = useState('');
  const [cloneProblems, setCloneProblems] = useState<Problems>({});

  const base = `/deployments/${d.family}/${d.id}`;
  // Rollback targets: every revision but the current one, newest first.
  const older = d.revisions.filter((r) => r.revision !== d.revision).sort((a, b) => b.revision - a.revision);
  const target = older.some((r) => String(r.revision) === revisionChoice) ? revisionChoice : String(older[0]?.revision ?? '');

  const consequence: Record<Action, string> = {
    pause: `Stops all replicas of ${d.name}. Until it is resumed the endpoint answers 503 (paused); the spec, scaling and credentials are kept.`,
    resume: `Starts ${d.name}'s replicas again at revision ${d.revision}; the endpoint answers once a replica is ready.`,
    rollback: `Creates revision ${d.revision + 1} with revision ${target}'s spec (a rolling update: new replicas replace the current ones once ready). Replica counts stay as they are.`,
    clone: `Creates a new deployment "${cloneName.trim()}" at revision 1 with ${d.name}'s spec, endpoint token and secrets. A private endpoint's clone gets its own client certificate. ${d.name} is not changed.`,
    delete: `Deletes ${d.name}: its replicas stop, the endpoint ${d.endpoint_url} stops answering, and the name "${d.name}" is freed at once for a new deployment. This cannot be undone.`,
  };

  const ask = (action: Action) => {
    setError(null);
    setDone(null);
    if (action === 'clone') {
      const problem = nameProblem(cloneName.trim());
      setCloneProblems(problem ? { name: inLabels(problem, CLONE_LABELS) } : {});
      if (problem) return;
    }
    setPending(action);
  };

  const run = async () => {
    if (!pending) return;
    const action = pending;
    setBusy(true);
    try {
      if (action === 'pause' || action === 'resume') {
        await api.post<Deployment>(`${base}/${action}`);
        setDone(action === 'pause' ? 'Paused: the replicas are stopping; the endpoint answers 503 (paused).' : 'Resumed: the replicas are starting.');
      } else if (action === 'rollback') {
        const after = await api.post<Deployment>(`${base}/rollback`, { revision: Number(target) });
        setDone(`Rolled back: revision ${after.revision} (revision ${target}'s spec) is rolling out.`);
      } else if (action === 'clone') {
        const created = await api.post<Deployment>(`${base}/clone`, { name: cloneName.trim() });
        setPending(null);
        navigate(`/deployments/${created.family}/${created.id}`);
        return;
      } else {
        await api.del<Deployment>(base);
        setPending(null);
        navigate('/deployments');
        return;
      }
      setPending(null);
      onChanged();
    } catch (err) {
      setPending(null);
      if (action === 'clone' && err instanceof ApiError && err.problems().some((p) => p.field === 'name')) {
        setCloneProblems(labelledProblems(toProblems(err.problems()), CLONE_LABELS));
      } else {
        setError(err instanceof ApiError ? inLabels(err.message) : err instanceof Error ? err.message : String(err));
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="panel" aria-labelledby="actions-title">
      <h2 id="actions-title">Actions</h2>
      <FormError message={error} />
      {done && (
        <p className="notice" role="status">
          {done}
        </p>
      )}
      <div className="grid2">
        <div>
          {d.paused ? (
            <>
              <p className="subtle">The deployment is paused: no replicas run and the endpoint answers 503.</p>
              <button type="button" className="button" onClick={() => ask('resume')}>
                Resume
              </button>
            </>
          ) : (
            <>
              <p className="subtle">Stops all replicas; the endpoint answers 503 (paused) until resumed.</p>
              <button type="button" className="button" onClick={() => ask('pause')}>
                Pause
              </button>
            </>
          )}
        </div>
        <div>
          {older.length === 0 ? (
            <p className="subtle">No earlier revision to roll back to.</p>
          ) : (
            <>
              <Select
                label="Revision"
                field="revision"
                problems={{}}
                value={target}
                onChange={setRevisionChoice}
                options={older.map((r) => ({
                  value: String(r.revision),
                  label: `Revision ${r.revision}: ${r.status}, ${r.reason}${r.source_revision !== null ? ` of ${r.source_revision}` : ''}, ${new Date(r.created_at).toLocaleString()}`,
                }))}
                hint={`Rolling back creates revision ${d.revision + 1} with the chosen revision's spec.`}
              />
              <button type="button" className="button" onClick={() => ask('rollback')}>
                Roll back
              </button>
            </>
          )}
        </div>
        {canClone && (
          <div>
            <TextInput label="New name" field="name" problems={cloneProblems} value={cloneName} onChange={(v) => { setCloneName(v); setCloneProblems({}); }} hint="A copy of this deployment under a new name (same rules as Endpoint Name)." />
            <button type="button" className="button" onClick={() => ask('clone')}>
              Clone
            </button>
          </div>
        )}
        <div>
          <p className="subtle">The endpoint stops answering and the name is freed.</p>
          <button type="button" className="button danger" onClick={() => ask('delete')}>
            Delete
          </button>
        </div>
      </div>
      {pending && (
        <ConfirmDialog
          open
          title={`${TITLES[pending]} ${d.name}?`}
          confirmLabel={TITLES[pending]}
          danger={pending === 'delete' || pending === 'pause'}
          busy={busy}
          onConfirm={() => void run()}
          onCancel={() => setPending(null)}
        >
          <p>{consequence[pending]}</p>
        </ConfirmDialog>
      )}
    </section>
  );
}
