// Owns the general-inference spec controls, shared by the create form and Settings: the preset
// picker (fills the container fields and adds the secret variables its engine needs, never the
// command), the container (image, tag, port, protocol, health check, registry credentials —
// from the vault, or a username and password typed here —, command) and the runtime options
// (logging, model caching, session affinity, metrics target, environment with secret
// variables, config file, annotations).

import type { Preset, RegistryCredential } from '../api/types';
import { CheckField, type Problems } from '../components/form';
import { AnnotationsField, EnvField, LoggingAndCaching, ProtocolSelect } from './common-fields';
import { Select, TextArea, TextInput, type Option } from './inputs';
import { argsToLines } from './rules';
import { vaultIdOf, withPresetSecrets, type GeneralValues, type RegistrySource } from './values';
import { labelFor } from './labels';

/** What selecting a preset writes into the form: everything the recipe fills except the command. */
export function presetPatch(p: Preset): Partial<GeneralValues> {
  return {
    preset: p.id,
    image: p.image,
    tag: p.tag,
    container_port: String(p.container_port),
    protocol: p.protocol === 'grpc' ? 'grpc' : 'http',
    health_check_path: p.health_check_path,
    registry_username: p.registry_username ?? '',
  };
}

export function PresetPicker({
  presets,
  values,
  set,
  problems,
}: {
  presets: readonly Preset[] | null;
  values: GeneralValues;
  set: (patch: Partial<GeneralValues>) => void;
  problems: Problems;
}) {
  const chosen = presets?.find((p) => p.id === values.preset);
  return (
    <>
      <Select
        field="preset"
        problems={problems}
        value={values.preset}
        disabled={presets === null}
        onChange={(id) => {
          const p = presets?.find((x) => x.id === id);
          // The variables its engine reads a credential from (the vendor container's registry key) become secret rows.
          set(p ? { ...presetPatch(p), env: withPresetSecrets(values.env, p.secret_env) } : { preset: '' });
        }}
        options={[{ value: '', label: presets === null ? 'Loading presets…' : 'None: your own image' }, ...(presets ?? []).map((p) => ({ value: p.id, label: p.name }))]}
        hint="Optional. A preset fills the image, tag, container port, protocol, health check path and registry username, and adds the secret variables its engine needs; you still choose the command and give their values."
      />
      {chosen && (
        <div className="notice" aria-live="polite">
          <p>{chosen.description}</p>
          <p>
            On this platform's local runtime: {chosen.local_runtime}. {chosen.needs_command ? 'This engine needs a command.' : 'No command is needed.'}
          </p>
          {chosen.example_command.length > 0 && (
            <p>
              Example command: <code>{chosen.example_command.join(' ')}</code>{' '}
              <button type="button" className="button small" onClick={() => set({ command: argsToLines(chosen.example_command) })}>
                Use example
              </button>
            </p>
          )}
        </div>
      )}
    </>
  );
}

interface ContainerProps {
  values: GeneralValues;
  set: (patch: Partial<GeneralValues>) => void;
  problems: Problems;
  /** Settings: the deployment holds a registry password (never shown). */
  passwordStored: boolean;
  /** The vault's registry credentials; null while loading. */
  credentials: readonly RegistryCredential[] | null;
}

function sourceHint(source: RegistrySource, chosen: RegistryCredential | undefined): string {
  if (source === 'own') return 'Only for a private registry. Credentials kept in the vault (the Registry credentials page) can be chosen here instead of typed.';
  if (!chosen) return `Registry credential ${vaultIdOf(source) ?? ''} of the vault.`;
  if (chosen.registry === null) return `"${chosen.name}" is bound to no registry, so it is not used until an admin binds it (Registry credentials page).`;
  return `Pulls as ${chosen.username} with the password kept in the vault as "${chosen.name}", sent to ${chosen.registry} only: the image must be pulled from there. Nothing is typed here.`;
}

/** Registry credentials: chosen from the vault (registry_credential_id), or a username and password typed here. */
function RegistryFields({ values, set, problems, passwordStored, credentials }: ContainerProps) {
  const source = values.registry_source;
  const chosenId = vaultIdOf(source);
  const chosen = credentials?.find((c) => c.id === chosenId);
  const vaultOptions: Option[] = (credentials ?? []).map((c) => ({ value: `vault:${c.id}`, label: `${c.name} (${c.username} at ${c.registry ?? 'no registry'})` }));
  // A credential chosen before the list has loaded still reads as chosen.
  if (chosenId !== null && !chosen) vaultOptions.push({ value: source, label: `registry credential ${chosenId}` });
  return (
    <>
      <Select
        field="registry_credential_id"
        problems={problems}
        value={source}
        onChange={(v) => set({ registry_source: v as RegistrySource })}
        options={[{ value: 'own', label: 'Enter a username and password' }]}
        groups={[{ label: 'From the vault', options: vaultOptions }]}
        hint={sourceHint(source, chosen)}
      />
      {source === 'own' && (
        <>
          <TextInput
            field="registry_username"
            problems={problems}
            value={values.registry_username}
            onChange={(registry_username) => set({ registry_username })}
            hint="Only for a private registry; set together with the password."
          />
          <TextInput
            field="registry_password"
            kind="password"
            problems={problems}
            value={values.registry_password}
            onChange={(registry_password) => set({ registry_password })}
            hint={
              passwordStored
                ? 'A password is stored (never shown). Leave empty to keep it; type a new one to replace it; clear the username to remove both.'
                : 'Only for a private registry; set together with the username. Stored sealed and never shown again.'
            }
          />
        </>
      )}
    </>
  );
}

export function ContainerFields(props: ContainerProps) {
  const { values, set, problems } = props;
  return (
    <>
      <div className="grid2">
        <TextInput
          field="image"
          problems={problems}
          value={values.image}
          onChange={(image) => set({ image })}
          placeholder="e.g. infergate/reference-engine"
          hint="Without a tag. infergate/reference-engine and the presets' images run on the local runtime's simulated GPU engine."
        />
        <TextInput field="tag" problems={problems} value={values.tag} onChange={(tag) => set({ tag })} hint="Default latest." />
        <TextInput
          field="container_port"
          kind="number"
          problems={problems}
          value={values.container_port}
          onChange={(container_port) => set({ container_port })}
          hint="The port the container serves on (1 to 65535), e.g. 8000."
        />
        <ProtocolSelect values={values} set={set} problems={problems} />
        <TextInput
          field="health_check_path"
          problems={problems}
          value={values.health_check_path}
          onChange={(health_check_path) => set({ health_check_path })}
          hint={values.protocol === 'grpc' ? 'Ignored for gRPC: readiness is a TCP connect to the port.' : 'Starts with /; a 2xx answer means ready. Ignored for gRPC (TCP probe).'}
        />
        <RegistryFields {...props} />
      </div>
      <TextArea
        field="command"
        problems={problems}
        value={values.command}
        onChange={(command) => set({ command })}
        hint="The entrypoint command and its arguments, one argument per line (no shell quoting: a line is one argument, spaces included). Empty: the image's default entrypoint."
      />
    </>
  );
}

export function RuntimeFields({ values, set, problems }: { values: GeneralValues; set: (patch: Partial<GeneralValues>) => void; problems: Problems }) {
  const file = values.config_file;
  const setFile = (patch: Partial<GeneralValues['config_file']>) => set({ config_file: { ...file, ...patch } });
  return (
    <>
      <LoggingAndCaching values={values} set={set} problems={problems} loggingHint="When off, the revision has no console logs." cachingHint="Keeps downloaded model files between replica starts." />
      <CheckField
        label={labelFor('session_affinity')}
        field="session_affinity"
        checked={values.session_affinity}
        onChange={(session_affinity) => set({ session_affinity })}
        problems={problems}
        hint="Best-effort sticky routing: requests with the same X-Session-Id header go to the same replica while it is up."
      />
      <Select
        field="routing_policy"
        problems={problems}
        value={values.routing_policy}
        onChange={(routing_policy) => set({ routing_policy: routing_policy === 'prefix_aware' ? 'prefix_aware' : 'affinity' })}
        options={[
          { value: 'affinity', label: 'Affinity: session hashing, else least loaded of two' },
          { value: 'prefix_aware', label: 'Prefix-aware: where the prompt is cached, weighed against load' },
        ]}
        hint="Prefix-aware suits LLM chat over HTTP on engines with prefix caching: a conversation's next turn goes where its prompt is cached unless that replica is too busy. Changing it makes a new revision."
      />
      <div className="grid2">
        <TextInput
          field="metrics_port"
          kind="number"
          problems={problems}
          value={values.metrics_port}
          onChange={(metrics_port) => set({ metrics_port })}
          hint="Set both or neither; defaults: the container port and /metrics."
        />
        <TextInput field="metrics_path" problems={problems} value={values.metrics_path} onChange={(metrics_path) => set({ metrics_path })} placeholder="e.g. /metrics" />
      </div>
      <EnvField values={values} set={set} problems={problems} />
      {/* Not a .field itself: the three parts inside are, each with its own problem. */}
      <fieldset data-field="config_file">
        <legend>
          <strong>Config file</strong>
        </legend>
        <div className="hint">Optional: one file mounted into the container. Filename and mount path are required once any part is given.</div>
        <div className="grid2">
          <TextInput field="config_file.filename" problems={problems} value={file.filename} onChange={(filename) => setFile({ filename })} hint="A plain file name, no '/'." />
          <TextInput field="config_file.mount_path" problems={problems} value={file.mount_path} onChange={(mount_path) => setFile({ mount_path })} hint="A directory, absolute (e.g. /etc/engine); the file appears inside it." />
        </div>
        <TextArea field="config_file.content" problems={problems} value={file.content} onChange={(content) => setFile({ content })} rows={5} />
        {problems.config_file && (
          <div className="field-error" role="alert">
            {problems.config_file}
          </div>
        )}
      </fieldset>
      <AnnotationsField values={values} set={set} problems={problems} />
    </>
  );
}
