// Owns the autoscaling controls of both families: replica bounds, the per-replica concurrency
// target, the signal the autoscaler scales on (concurrency, queue depth, KV cache or a TTFT
// objective, with its target in the unit the platform's table gives) and the cooldown, labelled
// alike for both (forms/labels). The families differ in two places the API also differs:
// general may scale to zero and calls the target max_concurrency; orchestrated keeps at least
// one Worker and calls it concurrency.

import type { Problems } from '../components/form';
import { Select, TextInput } from './inputs';
import { labelFor } from './labels';
import { AUTOSCALING_METRICS, isMetric, METRIC_NAMES, targetHint, unitOf } from './signal';
import type { ScalingValues } from './values';

export function ScalingFields({
  family,
  values,
  onChange,
  problems,
}: {
  family: 'general' | 'orchestrated';
  values: ScalingValues;
  onChange: (patch: Partial<ScalingValues>) => void;
  problems: Problems;
}) {
  const general = family === 'general';
  const min = labelFor('min_replicas');
  return (
    <div className="grid2">
      <TextInput
        field="min_replicas"
        kind="number"
        problems={problems}
        value={values.min_replicas}
        onChange={(min_replicas) => onChange({ min_replicas })}
        hint={general ? '0 allows scale-to-zero: the first request then waits for a replica to start.' : 'At least 1: orchestrated deployments do not scale to zero.'}
      />
      <TextInput
        field="max_replicas"
        kind="number"
        problems={problems}
        value={values.max_replicas}
        onChange={(max_replicas) => onChange({ max_replicas })}
        hint={`Equal to ${min} for a fixed size.`}
      />
      <TextInput
        field={general ? 'max_concurrency' : 'concurrency'}
        kind="number"
        problems={problems}
        value={values.target}
        onChange={(target) => onChange({ target })}
        hint={`In-flight requests per ${general ? 'replica' : 'Worker'} the autoscaler aims for; required when ${labelFor('max_replicas')} is above ${min}.`}
      />
      <Select
        field="autoscaling_metric"
        problems={problems}
        value={values.metric}
        onChange={(metric) => {
          if (isMetric(metric)) onChange({ metric });
        }}
        options={AUTOSCALING_METRICS.map((m) => ({ value: m, label: METRIC_NAMES[m] }))}
        hint={
          values.metric === 'concurrency'
            ? `Scales on ${labelFor('max_concurrency')}. The others scale on the engines' own figures, scraped by the gateway.`
            : `Scales on ${unitOf(values.metric)}, with the same windows and cooldown.`
        }
      />
      {values.metric !== 'concurrency' && (
        <TextInput
          field="autoscaling_target"
          kind="number"
          problems={problems}
          value={values.signal_target}
          onChange={(signal_target) => onChange({ signal_target })}
          hint={targetHint(values.metric)}
        />
      )}
      <TextInput
        field="cooldown_period"
        kind="number"
        problems={problems}
        value={values.cooldown_period}
        onChange={(cooldown_period) => onChange({ cooldown_period })}
        hint="0 to 3600 seconds the autoscaler waits before scaling down (default 300)."
      />
    </div>
  );
}
