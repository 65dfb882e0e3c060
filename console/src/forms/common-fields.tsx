// Owns the spec controls both families have, declared once for the general and orchestrated
// field groups (and so for both create forms and Settings): protocol, logging and model
// caching, environment variables (secret ones write-only) and annotations. Each family gives
// only its own hints.

import type { ReactNode } from 'react';
import { EnvEditor } from '../components/env-editor';
import { CheckField, KeyValueEditor, type Problems } from '../components/form';
import { Select } from './inputs';
import { labelFor } from './labels';
import type { CommonValues } from './values';

interface Props {
  values: CommonValues;
  set: (patch: Partial<CommonValues>) => void;
  problems: Problems;
}

export function ProtocolSelect({ values, set, problems }: Props) {
  return (
    <Select
      field="protocol"
      problems={problems}
      value={values.protocol}
      onChange={(v) => set({ protocol: v === 'grpc' ? 'grpc' : 'http' })}
      options={[
        { value: 'http', label: 'HTTP' },
        { value: 'grpc', label: 'gRPC' },
      ]}
    />
  );
}

/** Logging and model caching, each with the family's own words for what it does. */
export function LoggingAndCaching({ values, set, problems, loggingHint, cachingHint }: Props & { loggingHint: ReactNode; cachingHint: ReactNode }) {
  return (
    <>
      <CheckField label={labelFor('enable_logging')} field="enable_logging" checked={values.enable_logging} onChange={(enable_logging) => set({ enable_logging })} problems={problems} hint={loggingHint} />
      <CheckField
        label={labelFor('enable_model_caching')}
        field="enable_model_caching"
        checked={values.enable_model_caching}
        onChange={(enable_model_caching) => set({ enable_model_caching })}
        problems={problems}
        hint={cachingHint}
      />
    </>
  );
}

export function EnvField({ values, set, problems }: Props) {
  return <EnvEditor label={labelFor('env')} rows={values.env} stored={values.storedSecrets} onChange={set} problems={problems} />;
}

export function AnnotationsField({ values, set, problems }: Props) {
  return <KeyValueEditor label={labelFor('annotations')} field="annotations" pairs={values.annotations} onChange={(annotations) => set({ annotations })} problems={problems} keyLabel="Key" />;
}
