// Owns Settings' Traffic section: the rollout mode (automatic or manual, each said in one
// sentence), then one row per traffic entry — a revision (or "latest"), its percent, an optional
// tag — with rows added and removed, and the live sum the list must reach (100) before it can
// be saved. Problems, the browser's or the API's, show on the row and control they name
// (`traffic[1].percent`), the list's own (`traffic`: the sum, a tag used twice) under the sum.

import { useId } from 'react';
import { TRAFFIC_MAX_ENTRIES } from '../../../src/domain/traffic';
import type { Deployment, RolloutMode } from '../api/types';
import { FieldProblem, type Problems } from '../components/form';
import { Select, TextInput } from './inputs';
import { labelFor } from './labels';
import { LATEST, ROLLOUT_MODE_TEXT, sumOf, type TrafficRow } from './traffic';

const MODES: RolloutMode[] = ['automatic', 'manual'];

/** A row's problem for one of its controls; the entry's own (`traffic[i]`) goes on its revision. */
function rowProblems(problems: Problems, i: number): Problems {
  const at = (k: string) => problems[`traffic[${i}]${k}`];
  const out: Problems = {};
  const revision = at('.revision') ?? at('') ?? at('.latest');
  if (revision) out.revision = revision;
  const percent = at('.percent');
  if (percent) out.percent = percent;
  const tag = at('.tag');
  if (tag) out.tag = tag;
  return out;
}

export function TrafficFields({
  d,
  rows,
  onRows,
  mode,
  onMode,
  problems,
}: {
  d: Pick<Deployment, 'name' | 'revision' | 'revisions' | 'endpoint_url'>;
  rows: TrafficRow[];
  onRows: (rows: TrafficRow[]) => void;
  mode: RolloutMode;
  onMode: (mode: RolloutMode) => void;
  problems: Problems;
}) {
  const id = useId();
  const sum = sumOf(rows);
  const set = (i: number, patch: Partial<TrafficRow>) => onRows(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const newest = [...d.revisions].sort((a, b) => b.revision - a.revision);
  const options = (current: string) => {
    const list = [
      { value: LATEST, label: `Latest (now revision ${d.revision})` },
      ...newest.map((r) => ({
        value: String(r.revision),
        label: `Revision ${r.revision}${r.status === 'failed' ? ' (failed)' : ''}`,
        disabled: r.status === 'failed' && String(r.revision) !== current,
      })),
    ];
    if (!list.some((o) => o.value === current)) list.push({ value: current, label: `Revision ${current} (not found)`, disabled: false });
    return list;
  };
  const addRow = () => {
    const used = new Set(rows.map((r) => r.target));
    const next = newest.find((r) => r.status !== 'failed' && !used.has(String(r.revision)) && !(r.revision === d.revision && used.has(LATEST)));
    onRows([...rows, { target: next ? String(next.revision) : LATEST, percent: '0', tag: '' }]);
  };
  const listProblem = problems.traffic;
  // The host a tag gets: <tag>-<name> in place of <name> in the endpoint's host.
  const tagHostOf = (tag: string) => d.endpoint_url.replace(d.name, `${tag}-${d.name}`);

  return (
    <div className="panel">
      <h3>Traffic</h3>
      <p className="subtle">
        How requests split between revisions, applied by the gateways within seconds (no new revision). A client sending <code>X-Session-Id</code> stays on its revision
        while the split is unchanged. Each revision with a share runs and autoscales its own replicas; one left out drains and stops within a minute. A tag gives its
        revision its own host, <code>&lt;tag&gt;-{d.name}</code>, that reaches only that revision.
      </p>
      <fieldset className="field rollout-mode" data-field="rollout_mode">
        <legend>{labelFor('rollout_mode')}</legend>
        {MODES.map((m) => (
          <div className="radio" key={m}>
            <input id={`${id}-${m}`} type="radio" name={`${id}-rollout_mode`} value={m} checked={mode === m} onChange={() => onMode(m)} aria-describedby={`${id}-${m}-hint`} />
            <label htmlFor={`${id}-${m}`}>{m === 'automatic' ? 'Automatic' : 'Manual'}</label>
            <span className="hint" id={`${id}-${m}-hint`}>
              {ROLLOUT_MODE_TEXT[m]}
            </span>
          </div>
        ))}
        <FieldProblem id={`${id}-mode`} problem={problems.rollout_mode} />
      </fieldset>
      <div className="traffic-rows" role="group" aria-label="Traffic split">
        {rows.map((r, i) => {
          const rp = rowProblems(problems, i);
          const tag = r.tag.trim();
          return (
            <div className="traffic-row" key={i} data-row={i}>
              <Select
                label={`Revision, row ${i + 1}`}
                field={`traffic[${i}].revision`}
                problems={rp.revision ? { [`traffic[${i}].revision`]: rp.revision } : {}}
                value={r.target}
                onChange={(target) => set(i, { target })}
                options={options(r.target)}
              />
              <TextInput
                label={`Percent, row ${i + 1}`}
                field={`traffic[${i}].percent`}
                kind="number"
                problems={rp.percent ? { [`traffic[${i}].percent`]: rp.percent } : {}}
                value={r.percent}
                onChange={(percent) => set(i, { percent })}
              />
              <TextInput
                label={`Tag, row ${i + 1}`}
                field={`traffic[${i}].tag`}
                problems={rp.tag ? { [`traffic[${i}].tag`]: rp.tag } : {}}
                value={r.tag}
                onChange={(value) => set(i, { tag: value })}
                placeholder="optional, e.g. canary"
                hint={tag !== '' && /^[a-z][a-z0-9-]*$/.test(tag) ? `Host ${tagHostOf(tag)}` : undefined}
              />
              <button type="button" className="button small ghost" aria-label={`Remove traffic row ${i + 1}`} disabled={rows.length <= 1} onClick={() => onRows(rows.filter((_, j) => j !== i))}>
                Remove
              </button>
            </div>
          );
        })}
      </div>
      <button type="button" className="button small" onClick={addRow} disabled={rows.length >= TRAFFIC_MAX_ENTRIES}>
        Add traffic row
      </button>
      <p className={`traffic-sum${sum === 100 ? '' : ' off'}`} data-testid="traffic-sum" data-field="traffic" aria-live="polite">
        Sum: {sum} %{sum === 100 ? '' : ' — the percents must sum to 100 before saving'}
      </p>
      <FieldProblem id={`${id}-list`} problem={listProblem} />
    </div>
  );
}
