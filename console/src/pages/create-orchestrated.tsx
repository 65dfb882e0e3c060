// Owns the create form of orchestrated inference (#/deployments/new/orchestrated): aggregated
// deployments only (a Frontend and one autoscaled pool of GPU Workers); disaggregated ones are
// made through the API. Same behaviour as the general form: the API's rules checked next to
// each field, the endpoint token created on submit when asked and shown once, a refusal shown
// where it belongs with every value kept, then the new deployment's page. Flow control may be
// set here too (empty: the defaults).

import { useEffect, useState, type FormEvent } from 'react';
import type { Cluster, Items, VaultToken } from '../api/types';
import { FormError } from '../components/form';
import { usePoll } from '../hooks';
import { EndpointProtection } from '../forms/endpoint-protection';
import { FlowControlFields } from '../forms/flow-control-fields';
import { createDeployment, RefusedCreate } from '../forms/create-deployment';
import { defaultPlacement, HardwareFields } from '../forms/hardware-fields';
import { TextInput } from '../forms/inputs';
import { ModelFields, WorkerFields } from '../forms/orchestrated-fields';
import { checkOrchestrated, type OrchestratedBody } from '../forms/rules';
import { ScalingFields } from '../forms/scaling-fields';
import { bodySignalProblems } from '../forms/signal';
import { keepFocusOnPress, useProblems } from '../forms/use-problems';
import { authPlan, emptyAuth, emptyFlowControl, emptyOrchestrated, flowControlBody, orchestratedBody, type AuthValues, type FlowControlValues, type OrchestratedValues } from '../forms/values';

const PLACED = [
  'name', 'cluster_id', 'model', 'serving_mode', 'hardware_instance_id', 'min_replicas', 'max_replicas', 'concurrency',
  'cooldown_period', 'served_model_name', 'model_hub_token', 'protocol', 'extra_args', 'env', 'secret_env', 'annotations', 'enable_logging',
  'enable_model_caching', 'endpoint_bearer_token', 'endpoint_token_id', 'private_endpoint', 'flow_control',
  'autoscaling_metric', 'autoscaling_target',
];

export function CreateOrchestratedPage() {
  const clusters = usePoll<Items<Cluster>>('/clusters', 0);
  const vault = usePoll<Items<VaultToken>>('/vault/tokens', 0);
  const [name, setName] = useState('');
  const [values, setValues] = useState<OrchestratedValues>(emptyOrchestrated);
  const [auth, setAuth] = useState<AuthValues>(() => emptyAuth('new'));
  const [flow, setFlow] = useState<FlowControlValues>(emptyFlowControl);
  const [busy, setBusy] = useState(false);

  // The first cluster with orchestration enabled and its first hardware type.
  useEffect(() => {
    const items = clusters.data?.items;
    if (items) setValues((v) => (v.cluster_id === null ? { ...v, ...defaultPlacement(items, 'orchestrated') } : v));
  }, [clusters.data]);

  const set = (patch: Partial<OrchestratedValues>) => setValues((v) => ({ ...v, ...patch }));
  const built = orchestratedBody(values);
  const flowBuilt = flowControlBody(flow);
  const plan = authPlan(auth, vault.data?.items ?? [], null);
  const body: OrchestratedBody = { name: name.trim(), serving_mode: 'aggregated', ...built.body, ...plan.body, ...flowBuilt.body };
  const client = { ...bodySignalProblems(body), ...checkOrchestrated(body, { mode: 'create', tokenBound: plan.tokenBound }), ...plan.problems, ...built.problems, ...flowBuilt.problems };
  const fp = useProblems(client, body as Record<string, unknown>, PLACED);
  const p = fp.shown;
  const noOrchestration = clusters.data !== null && !clusters.data.items.some((c) => c.orchestration_enabled);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy || !fp.submit()) return;
    setBusy(true);
    try {
      await createDeployment('orchestrated', name, body, auth, plan.createOnSubmit, (token) => setAuth((a) => ({ ...a, created: token })));
    } catch (err) {
      if (err instanceof RefusedCreate) fp.refused(err.cause, err.sent as Record<string, unknown>);
      else fp.refused(err, body as Record<string, unknown>);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <div className="page-head">
        <h1>Create an orchestrated inference deployment</h1>
        <div className="actions">
          <a className="button" href="#/deployments/new">
            Back
          </a>
        </div>
      </div>
      <p className="notice">
        The console creates <strong>aggregated</strong> deployments: a Frontend and one autoscaled pool of GPU Workers. Disaggregated (prefill/decode)
        deployments are API-only: <code>POST /deployments/orchestrated</code> with <code>serving_mode: "disaggregated"</code> and <code>worker_pools</code>.
      </p>
      {clusters.error && <FormError message={clusters.error.message} />}
      {noOrchestration && <FormError message="No cluster has orchestration enabled, so orchestrated deployments cannot be created here; ask support to enable it." />}
      <form noValidate onSubmit={(e) => void submit(e)} onBlur={fp.onBlur}>
        <div className="panel">
          <h2>Model</h2>
          <TextInput
            field="name"
            problems={p}
            value={name}
            onChange={setName}
            hint="Lowercase letters, digits and hyphens; starts with a letter, ends with a letter or digit; at most 20 characters; unique across all deployments."
          />
          <ModelFields values={values} set={set} problems={p} tokenStored={false} />
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
          <h2>Workers</h2>
          <WorkerFields values={values} set={set} problems={p} />
        </div>
        <div className="panel">
          <h2>Hardware</h2>
          <HardwareFields family="orchestrated" clusters={clusters.data?.items ?? null} clusterId={values.cluster_id} hardwareId={values.hardware_instance_id} onChange={set} problems={p} />
        </div>
        <div className="panel">
          <h2>Scaling</h2>
          <ScalingFields family="orchestrated" values={values.scaling} onChange={(s) => set({ scaling: { ...values.scaling, ...s } })} problems={p} />
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
