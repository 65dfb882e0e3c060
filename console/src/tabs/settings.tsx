// Owns the Settings tab of the deployment detail: the editor of a general or aggregated
// orchestrated deployment (forms/settings-editor), or for a disaggregated one its settings read
// only (editing and cloning those are API-only), then the actions every deployment has: Pause or
// Resume, Roll back, Clone (not disaggregated), Delete. Members see the same controls; what
// the server refuses them, it says in its own words.

import type { Cluster, Deployment, Items, Pool } from '../api/types';
import { envSummary } from '../components/env-editor';
import { usePoll } from '../hooks';
import type { Account } from '../session';
import { DeploymentActions } from '../forms/deployment-actions';
import { hardwareLabel } from '../forms/hardware-fields';
import { labelFor, PROTECTION_LABEL } from '../forms/labels';
import { SettingsEditor } from '../forms/settings-editor';

export function SettingsTab(props: { deployment: Deployment; account: Account; onChanged: () => void }) {
  const d = props.deployment;
  const disaggregated = d.family === 'orchestrated' && d.serving_mode === 'disaggregated';
  return (
    <section aria-label="Settings">
      {disaggregated ? (
        <DisaggregatedSettings d={d} />
      ) : (
        // A new editor per deployment: its values belong to the one it was filled from.
        <SettingsEditor key={d.id} deployment={d} account={props.account} onChanged={props.onChanged} />
      )}
      <DeploymentActions d={d} onChanged={props.onChanged} canClone={!disaggregated} />
    </section>
  );
}

function DisaggregatedSettings({ d }: { d: Deployment }) {
  const clusters = usePoll<Items<Cluster>>('/clusters', 0);
  const cluster = clusters.data?.items.find((c) => c.id === d.cluster_id);
  const pool = (p: Pool | undefined) => {
    if (!p) return 'not set';
    const h = cluster?.hardware.find((x) => x.id === p.hardware_instance_id);
    return `${p.replicas} replica${p.replicas === 1 ? '' : 's'} on ${h ? hardwareLabel(h) : `hardware ${p.hardware_instance_id}`}`;
  };
  return (
    <div className="panel">
      <h2>Settings</h2>
      <p className="notice">
        This is a disaggregated deployment (separate prefill and decode pools). Editing and cloning it are API-only:{' '}
        <code>PATCH /deployments/orchestrated/{d.id}</code> (e.g. <code>worker_pools.decode.replicas</code>) and{' '}
        <code>POST /deployments/orchestrated/{d.id}/clone</code>. Pause, Resume, Roll back and Delete work here.
      </p>
      <dl className="facts">
        <dt>{labelFor('name')}</dt>
        <dd>{d.name}</dd>
        <dt>{labelFor('model')}</dt>
        <dd>{d.model}</dd>
        <dt>{labelFor('served_model_name')}</dt>
        <dd>{d.served_model_name ?? 'the model-hub identifier'}</dd>
        <dt>{labelFor('serving_mode')}</dt>
        <dd>Disaggregated</dd>
        <dt>{labelFor('cluster_id')}</dt>
        <dd>{cluster?.name ?? `cluster ${d.cluster_id}`}</dd>
        <dt>Prefill pool</dt>
        <dd>{pool(d.worker_pools?.prefill)}</dd>
        <dt>Decode pool</dt>
        <dd>{pool(d.worker_pools?.decode)}</dd>
        <dt>{labelFor('protocol')}</dt>
        <dd>{d.protocol === 'grpc' ? 'gRPC' : 'HTTP'}</dd>
        <dt>{labelFor('enable_logging')}</dt>
        <dd>{d.enable_logging ? 'on' : 'off'}</dd>
        <dt>{labelFor('enable_model_caching')}</dt>
        <dd>{d.enable_model_caching ? 'on' : 'off'}</dd>
        <dt>{labelFor('extra_args')}</dt>
        <dd>{d.extra_args && d.extra_args.length > 0 ? <code>{d.extra_args.join(' ')}</code> : 'none'}</dd>
        <dt>{labelFor('env')}</dt>
        <dd>{envSummary(d.env, d.secret_env)}</dd>
        <dt>{labelFor('annotations')}</dt>
        <dd>{Object.entries(d.annotations ?? {}).map(([k, v]) => `${k}=${v}`).join(', ') || 'none'}</dd>
        <dt>{PROTECTION_LABEL}</dt>
        <dd>
          {[d.endpoint_token_id !== null ? `vault token ${d.endpoint_token_id}` : '', d.client_certificate_id !== null ? `client certificate ${d.client_certificate_id}` : '']
            .filter(Boolean)
            .join(' and ') || 'none'}
        </dd>
      </dl>
    </div>
  );
}
