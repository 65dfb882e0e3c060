// Owns the orchestrated-inference spec controls, shared by the create form and Settings: the
// model and how clients name it, the model hub token for gated models, the protocol, logging
// and caching, extra worker arguments, environment variables (secret ones write-only) and annotations. The platform
// supplies the runtime image, so there is no image, port or command here.

import { CheckField, type Problems } from '../components/form';
import { AnnotationsField, EnvField, LoggingAndCaching, ProtocolSelect } from './common-fields';
import { TextArea, TextInput } from './inputs';
import type { OrchestratedValues } from './values';

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
      <ProtocolSelect values={values} set={set} problems={problems} />
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
      <LoggingAndCaching
        values={values}
        set={set}
        problems={problems}
        loggingHint="On by default. When off, the revision has no console logs."
        cachingHint="Keeps downloaded model weights between Worker starts."
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
      <EnvField values={values} set={set} problems={problems} />
      <AnnotationsField values={values} set={set} problems={problems} />
    </>
  );
}
