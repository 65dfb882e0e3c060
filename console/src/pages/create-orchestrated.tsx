// Owns the create form of orchestrated inference (#/deployments/new/orchestrated): aggregated
// deployments only (a Frontend and one autoscaled pool of GPU Workers); disaggregated ones are
// made through the API. Same behaviour as the general form: the API's rules checked next to
// each field, the endpoint token created on submit when asked and shown once, a refusal shown
// where it belongs with every value kept, then the new deployment's page. Flow control may be
// set here too (empty: the defaults).

import { ModelFields, WorkerFields } from '../forms/orchestrated-fields';
import { checkOrchestrated, type OrchestratedBody } from '../forms/rules';
import { emptyOrchestrated, orchestratedBody } from '../forms/values';
import { CreateFormFrame, Panel, useCreateForm } from './create-form';

const PLACED = [
  'name', 'cluster_id', 'model', 'serving_mode', 'hardware_instance_id', 'min_replicas', 'max_replicas', 'concurrency',
  'cooldown_period', 'served_model_name', 'model_hub_token', 'protocol', 'extra_args', 'env', 'secret_env', 'annotations', 'enable_logging',
  'enable_model_caching', 'endpoint_bearer_token', 'endpoint_token_id', 'private_endpoint', 'flow_control',
  'autoscaling_metric', 'autoscaling_target',
];
const FIXED: Partial<OrchestratedBody> = { serving_mode: 'aggregated' };

export function CreateOrchestratedPage() {
  const form = useCreateForm({ family: 'orchestrated', empty: emptyOrchestrated, build: orchestratedBody, fixed: FIXED, check: checkOrchestrated, placed: PLACED });
  const { values, set, problems: p, parts, clusters } = form;
  const noOrchestration = clusters.data !== null && !clusters.data.items.some((c) => c.orchestration_enabled);
  return (
    <CreateFormFrame
      title="Create an orchestrated inference deployment"
      statement={
        <p className="notice">
          The console creates <strong>aggregated</strong> deployments: a Frontend and one autoscaled pool of GPU Workers. Disaggregated (prefill/decode)
          deployments are API-only: <code>POST /deployments/orchestrated</code> with <code>serving_mode: "disaggregated"</code> and <code>worker_pools</code>.
        </p>
      }
      errors={[
        clusters.error?.message ?? null,
        noOrchestration ? 'No cluster has orchestration enabled, so orchestrated deployments cannot be created here; ask support to enable it.' : null,
      ]}
      frame={form.frame}
    >
      <Panel title="Model">
        {parts.name('Lowercase letters, digits and hyphens; starts with a letter, ends with a letter or digit; at most 20 characters; unique across all deployments.')}
        <ModelFields values={values} set={set} problems={p} tokenStored={false} />
      </Panel>
      {parts.protection}
      <Panel title="Workers">
        <WorkerFields values={values} set={set} problems={p} />
      </Panel>
      {parts.hardware}
      {parts.scaling}
      {parts.flowControl}
    </CreateFormFrame>
  );
}
