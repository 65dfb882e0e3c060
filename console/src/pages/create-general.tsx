// Owns the create form of general inference (#/deployments/new/general): every setting of the
// family as a labelled control, the browser's check of the API's rules next to each field, the
// endpoint token (created on submit when asked, shown once), flow control (empty: the
// defaults), POST /deployments/general, then the new deployment's page. A refusal is shown next to the field it names and keeps every value.

import type { Items, Preset, RegistryCredential } from '../api/types';
import { usePoll } from '../hooks';
import { ContainerFields, PresetPicker, RuntimeFields } from '../forms/general-fields';
import { checkGeneral, type GeneralBody } from '../forms/rules';
import { emptyGeneral, generalBody } from '../forms/values';
import { CreateFormFrame, Panel, useCreateForm } from './create-form';

const PLACED = [
  'name', 'cluster_id', 'hardware_instance_id', 'preset', 'image', 'tag', 'container_port', 'protocol', 'health_check_path',
  'registry_username', 'registry_password', 'registry_credential_id', 'enable_logging', 'enable_model_caching', 'session_affinity', 'routing_policy', 'command',
  'metrics_port', 'metrics_path', 'env', 'secret_env', 'config_file', 'annotations', 'min_replicas', 'max_replicas', 'max_concurrency',
  'cooldown_period', 'endpoint_bearer_token', 'endpoint_token_id', 'private_endpoint', 'flow_control',
  'autoscaling_metric', 'autoscaling_target',
];

export function CreateGeneralPage() {
  const presets = usePoll<Items<Preset>>('/presets', 0);
  const registry = usePoll<Items<RegistryCredential>>('/vault/registry-credentials', 0);
  // A vault credential is checked against the image's registry host as the API will.
  const check = (body: GeneralBody, opts: { mode: 'create'; tokenBound: boolean }) => checkGeneral(body, { ...opts, registryCredentials: registry.data?.items ?? [] });
  const form = useCreateForm({ family: 'general', empty: emptyGeneral, build: generalBody, check, placed: PLACED });
  const { values, set, problems: p, parts } = form;
  return (
    <CreateFormFrame
      title="Create a general inference deployment"
      statement={<p className="subtle">Your container and command on the platform's hardware, behind an authenticated HTTPS endpoint.</p>}
      errors={[(form.clusters.error ?? presets.error)?.message ?? null]}
      frame={form.frame}
    >
      <Panel title="Endpoint">
        {parts.name('Lowercase letters, digits and hyphens; starts with a letter, ends with a letter or digit; at most 20 characters; unique across all deployments. The endpoint is <name>.<domain>.')}
        <PresetPicker presets={presets.data?.items ?? null} values={values} set={set} problems={p} />
      </Panel>
      <Panel title="Container">
        <ContainerFields values={values} set={set} problems={p} passwordStored={false} credentials={registry.data?.items ?? null} />
      </Panel>
      {parts.hardware}
      {parts.scaling}
      {parts.protection}
      <Panel title="Runtime">
        <RuntimeFields values={values} set={set} problems={p} />
      </Panel>
      {parts.flowControl}
    </CreateFormFrame>
  );
}
