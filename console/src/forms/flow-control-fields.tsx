// Owns the flow control controls both create forms and Settings show: the queue's size and the
// longest wait of each X-Priority class, each empty for its default (the defaults are the
// placeholders, so an empty form shows what applies). All empty: the deployment has no flow
// control of its own and follows the platform's defaults. The caller gives the heading, at the
// level its page needs.

import type { Problems } from '../components/form';
import { DEFAULT_FLOW_CONTROL } from '../../../src/domain/records';
import { TextInput } from './inputs';
import type { FlowControlValues } from './values';

const CLASS_HINT = {
  critical: 'Served first, shed last.',
  standard: 'A request without X-Priority is standard.',
  sheddable: 'Batch and background work: shed first.',
} as const;

export function FlowControlFields({ values, onChange, problems }: { values: FlowControlValues; onChange: (patch: Partial<FlowControlValues>) => void; problems: Problems }) {
  const d = DEFAULT_FLOW_CONTROL;
  const wait = (cls: 'critical' | 'standard' | 'sheddable') => (
    <TextInput
      field={`flow_control.max_wait_seconds.${cls}`}
      kind="number"
      problems={problems}
      value={values[cls]}
      placeholder={String(d.max_wait_seconds[cls])}
      onChange={(v) => onChange({ [cls]: v })}
      hint={`${CLASS_HINT[cls]} 0 to 3600; empty: ${d.max_wait_seconds[cls]}.`}
    />
  );
  return (
    <>
      <p className="subtle">
        Once every replica is saturated, requests wait in a queue ordered by their X-Priority header (critical, standard, sheddable) and shared fairly
        between credentials; a wait past its class's limit, or a full queue, is answered 429 with Retry-After. Leave all empty for the defaults.
      </p>
      <div className="grid2">
        <TextInput
          field="flow_control.max_queue"
          kind="number"
          problems={problems}
          value={values.max_queue}
          placeholder={String(d.max_queue)}
          onChange={(max_queue) => onChange({ max_queue })}
          hint={`Requests that may wait at once, all classes together. 0 to 100000 (0: none waits); empty: ${d.max_queue}.`}
        />
        {wait('critical')}
        {wait('standard')}
        {wait('sheddable')}
      </div>
    </>
  );
}
