// Owns the orchestrated-inference spec controls, shared by the create form and Settings: the
// model and how clients name it, the model hub token for gated models, the protocol, logging
// and caching, extra worker arguments, environment variables (secret ones write-only) and annotations. The platform
// supplies the runtime image, so there is no image, port or command here.

import { EnvEditor } from '../components/env-editor';
import { CheckField, KeyValueEditor, type Problems } from '../components/form';
import { Select, TextArea, TextInput } from './inputs';
import type { OrchestratedValues } from './values';
import { labelFor } from './labels';

export function ModelFields({
  values,
  set,
  problems,
  tokenStored,
}: {
  values: OrchestratedValues;
  set: (patch: Partial<OrchestratedValues>) => void;
  problems: Problems;
  /** Settings: the deployment holds a model hub token (never shown). */
  tokenStored: boolean;
}) {
  return (
    <div className="grid2">
      <TextInput
        field="model"
        problems={problems}
        value={values.model}
        onChange={(model) => set({ model })}
        placeholder="e.g. meta-llama/Llama-3.1-8B-Instruct"
        hint="A model-hub identifier: <org>/<model>."
      />
      <TextInput
        field="served_model_name"
        problems={problems}
        value={values.served_model_name}
        onChange={(served_model_name) => set({ served_model_name })}
        hint="Optional alias clients send as the model name; empty: the model-hub identifier."
      />
      <TextInput
        field="model_hub_token"
        kind="password"
        problems={problems}
        value={values.model_hub_token}
        onChange={(model_hub_token) => set({ model_hub_token, clear_model_hub_token: false })}
        hint={tokenStored ? 'A token is stored (never shown). Leave empty to keep it; type a new one to replace it.' : 'For gated or private models. Stored sealed and never shown again.'}
      />
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
      {tokenStored && values.model_hub_token === '' && (
        <CheckField
          label="Remove the stored model hub token"
          field="model_hub_token"
          checked={values.clear_model_hub_token}
          onChange={(clear_model_hub_token) => set({ clear_model_hub_token })}
          problems={{}}
        />
      )}
    </div>
  );
}

export function WorkerFields({ values, set, problems }: { values: OrchestratedValues; set: (patch: Partial<OrchestratedValues>) => void; problems: Problems }) {
  return (
    <>
      <CheckField label={labelFor('enable_logging')} field="enable_logging" checked={values.enable_logging} onChange={(enable_logging) => set({ enable_logging })} problems={problems} hint="On by default. When off, the revision has no console logs." />
      <CheckField
        label={labelFor('enable_model_caching')}
        field="enable_model_caching"
        checked={values.enable_model_caching}
        onChange={(enable_model_caching) => set({ enable_model_caching })}
        problems={problems}
        hint="Keeps downloaded model weights between Worker starts."
      />
      <TextArea
        field="extra_args"
        problems={problems}
        value={values.extra_args}
        onChange={(extra_args) => set({ extra_args })}
        hint={
          <>
            <strong>Use only when directed by support:</strong> an unsupported value can prevent the worker from starting. Extra worker arguments, one per line.
          </>
        }
      />
      <EnvEditor
        label={labelFor('env')}
        rows={values.env}
        stored={values.storedSecrets}
        onChange={set}
        problems={problems}
      />
      <KeyValueEditor label={labelFor('annotations')} field="annotations" pairs={values.annotations} onChange={(annotations) => set({ annotations })} problems={problems} keyLabel="Key" />
    </>
  );
}
