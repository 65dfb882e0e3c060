// Owns the create form of general inference (#/deployments/new/general): every setting of the
// family as a labelled control, the browser's check of the API's rules next to each field, the
// endpoint token (created on submit when asked, shown once), flow control (empty: the
// defaults), POST /deployments/general, then the new deployment's page. A refusal is shown next to the field it names and keeps every value.

import { useEffect, useState, type FormEvent } from 'react';
import type { Cluster, Items, Preset, RegistryCredential, VaultToken } from '../api/types';
import { FormError } from '../components/form';
import { usePoll } from '../hooks';
import { EndpointProtection } from '../forms/endpoint-protection';
import { FlowControlFields } from '../forms/flow-control-fields';
import { createDeployment, RefusedCreate } from '../forms/create-deployment';
import { ContainerFields, PresetPicker, RuntimeFields } from '../forms/general-fields';
import { defaultPlacement, HardwareFields } from '../forms/hardware-fields';
import { TextInput } from '../forms/inputs';
import { checkGeneral, type GeneralBody } from '../forms/rules';
import { ScalingFields } from '../forms/scaling-fields';
import { bodySignalProblems } from '../forms/signal';
import { keepFocusOnPress, useProblems } from '../forms/use-problems';
import { authPlan, emptyAuth, emptyFlowControl, emptyGeneral, flowControlBody, generalBody, type AuthValues, type FlowControlValues, type GeneralValues } from '../forms/values';

/** Fields with a control on this page; a refusal naming any other goes to the form-level error. */
const PLACED = [
  'name', 'cluster_id', 'hardware_instance_id', 'preset', 'image', 'tag', 'container_port', 'protocol', 'health_check_path',
  'registry_username', 'registry_password', 'registry_credential_id', 'enable_logging', 'enable_model_caching', 'session_affinity', 'routing_policy', 'command',
  'metrics_port', 'metrics_path', 'env', 'secret_env', 'config_file', 'annotations', 'min_replicas', 'max_replicas', 'max_concurrency',
  'cooldown_period', 'endpoint_bearer_token', 'endpoint_token_id', 'private_endpoint', 'flow_control',
  'autoscaling_metric', 'autoscaling_target',
];

export function CreateGeneralPage() {
  const clusters = usePoll<Items<Cluster>>('/clusters', 0);
  const presets = usePoll<Items<Preset>>('/presets', 0);
  const vault = usePoll<Items<VaultToken>>('/vault/tokens', 0);
  const registry = usePoll<Items<RegistryCredential>>('/vault/registry-credentials', 0);
  const [name, setName] = useState('');
  const [values, setValues] = useState<GeneralValues>(emptyGeneral);
  const [auth, setAuth] = useState<AuthValues>(() => emptyAuth('new'));
  const [flow, setFlow] = useState<FlowControlValues>(emptyFlowControl);
  const [busy, setBusy] = useState(false);

  // The first cluster and its first hardware type, once the catalog has loaded.
  useEffect(() => {
    const items = clusters.data?.items;
    if (items) setValues((v) => (v.cluster_id === null ? { ...v, ...defaultPlacement(items, 'general') } : v));
  }, [clusters.data]);

  const set = (patch: Partial<GeneralValues>) => setValues((v) => ({ ...v, ...patch }));
  const built = generalBody(values);
  const flowBuilt = flowControlBody(flow);
  const plan = authPlan(auth, vault.data?.items ?? [], null);
  const body: GeneralBody = { name: name.trim(), ...built.body, ...plan.body, ...flowBuilt.body };
  const client = { ...bodySignalProblems(body), ...checkGeneral(body, { mode: 'create', tokenBound: plan.tokenBound }), ...plan.problems, ...built.problems, ...flowBuilt.problems };
  const fp = useProblems(client, body as Record<string, unknown>, PLACED);
  const p = fp.shown;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy || !fp.submit()) return;
    setBusy(true);
    try {
      await createDeployment('general', name, body, auth, plan.createOnSubmit, (token) => setAuth((a) => ({ ...a, created: token })));
    } catch (err) {
      if (err instanceof RefusedCreate) fp.refused(err.cause, err.sent as Record<string, unknown>);
      else fp.refused(err, body as Record<string, unknown>);
    } finally {
      setBusy(false);
    }
  };

  const loadError = clusters.error ?? presets.error;
  return (
    <section>
      <div className="page-head">
        <h1>Create a general inference deployment</h1>
        <div className="actions">
          <a className="button" href="#/deployments/new">
            Back
          </a>
        </div>
      </div>
      <p className="subtle">Your container and command on the platform's hardware, behind an authenticated HTTPS endpoint.</p>
      {loadError && <FormError message={loadError.message} />}
      <form noValidate onSubmit={(e) => void submit(e)} onBlur={fp.onBlur}>
        <div className="panel">
          <h2>Endpoint</h2>
          <TextInput
            field="name"
            problems={p}
            value={name}
            onChange={setName}
            hint="Lowercase letters, digits and hyphens; starts with a letter, ends with a letter or digit; at most 20 characters; unique across all deployments. The endpoint is <name>.<domain>."
          />
          <PresetPicker presets={presets.data?.items ?? null} values={values} set={set} problems={p} />
        </div>
        <div className="panel">
          <h2>Container</h2>
          <ContainerFields values={values} set={set} problems={p} passwordStored={false} credentials={registry.data?.items ?? null} />
        </div>
        <div className="panel">
          <h2>Hardware</h2>
          <HardwareFields family="general" clusters={clusters.data?.items ?? null} clusterId={values.cluster_id} hardwareId={values.hardware_instance_id} onChange={set} problems={p} />
        </div>
        <div className="panel">
          <h2>Scaling</h2>
          <ScalingFields family="general" values={values.scaling} onChange={(s) => set({ scaling: { ...values.scaling, ...s } })} problems={p} />
        </div>
        <EndpointProtection
          auth={auth}
          onChange={(a) => setAuth((cur) => ({ ...cur, ...a }))}
          vault={vault.data?.items ?? null}
          current={null}
          endpointName={name}
          problems={p}
          submitVerb="Create"
        />
        <div className="panel">
          <h2>Runtime</h2>
          <RuntimeFields values={values} set={set} problems={p} />
        </div>
        <div className="panel">
          <h2>Flow control</h2>
          <FlowControlFields values={flow} onChange={(f) => setFlow((v) => ({ ...v, ...f }))} problems={p} />
        </div>
        <FormError message={fp.formError} />
        <div className="form-actions">
          <button type="submit" className="button primary" disabled={busy} aria-busy={busy} onMouseDown={keepFocusOnPress}>
            Create
          </button>
          <a className="button" href="#/deployments">
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}
