// Owns the Overview tab: endpoint and how to call it (the snippets of domain/call-snippets.ts:
// curl and the OpenAI SDKs, with the platform CA and the .pem for mTLS to download beside
// them, the endpoint token filled in while its one-time banner shows it), model or image, hardware, scaling configuration, component
// health and the replicas (a replica restarting without becoming ready is called out, with
// the way to its logs), the autoscaler's current desired count and the signal it scales on, the
// traffic split and rollout mode, the revisions that run side by side (tabs/revision-compare),
// and the revision history with its traffic actions (tabs/revision-history).

import { useState } from 'react';
import { download } from '../api/client';
import type { ActivityAnswer, Cluster, Deployment, Items, Replica } from '../api/types';
import { usePoll } from '../hooks';
import { autoscalerNow } from '../components/autoscaler-now';
import { CopyButton } from '../components/copy';
import { Endpoint } from '../components/deployment-bits';
import { useShownToken } from '../shown-tokens';
import { Allowed } from '../access';
import { CA_FILE, callSnippets, clientPemFile, TOKEN_VARIABLE } from '../../../src/domain/call-snippets';
import { describeTarget } from '../../../src/domain/autoscaling-signal';
import { rolloutModeOf, sharesOf, splitWords } from '../forms/traffic';
import { RevisionCompare } from './revision-compare';
import { RevisionHistory } from './revision-history';

export function OverviewTab({ d, onChanged }: { d: Deployment; onChanged: () => void }) {
  const clusters = usePoll<Items<Cluster>>('/clusters', 0);
  const activity = usePoll<ActivityAnswer>(`/deployments/${d.family}/${d.id}/activity`, 5000);
  const replicas = usePoll<Items<Replica>>(`/deployments/${d.family}/${d.id}/replicas`, 3000);
  const crashing = (replicas.data?.items ?? []).filter((r) => r.restarts > 0 && r.state !== 'ready');
  const [pemError, setPemError] = useState<string | null>(null);
  const [caError, setCaError] = useState<string | null>(null);
  const shownToken = useShownToken(d.family, d.id);
  // The console is served by the control API: its origin is where the CA is fetched from.
  const snippets = callSnippets(d, { token: shownToken, apiUrl: window.location.origin });
  const pemFile = clientPemFile(d);
  const downloadPem = () => {
    setPemError(null);
    download(`/certificates/${d.client_certificate_id}/pem`, pemFile, pemFile).catch((e: Error) => setPemError(e.message));
  };
  const cluster = clusters.data?.items.find((c) => c.id === d.cluster_id);
  const hw = (id: number | null | undefined) => cluster?.hardware.find((h) => h.id === id);
  const hardwareText = (id: number | null | undefined) => {
    const h = hw(id);
    return h ? `${h.name} (${h.gpus_per_instance} GPU${h.gpus_per_instance === 1 ? '' : 's'} per instance)` : `hardware ${id ?? '—'}`;
  };
  // The same point as the Activity tab's line and its charts' last point (autoscaler-now.ts).
  const autoscaler = activity.data ? autoscalerNow(activity.data) : null;
  const disaggregated = d.family === 'orchestrated' && d.serving_mode === 'disaggregated';

  return (
    <div>
      {crashing.length > 0 && (
        <div className="form-error" role="alert">
          {crashing.map((r) => `${r.name} has restarted ${r.restarts} time${r.restarts === 1 ? '' : 's'} without becoming ready`).join('; ')}.{' '}
          <a href={`#/deployments/${d.family}/${d.id}/logs`}>Its logs say why.</a>
        </div>
      )}
      <div className="panel">
        <dl className="facts">
          <dt>Endpoint</dt>
          <dd>
            <Endpoint d={d} withPath />
          </dd>
          <dt>Protocol</dt>
          <dd>{d.protocol === 'grpc' ? 'gRPC' : 'HTTP'}</dd>
          {d.family === 'general' ? (
            <>
              <dt>Image</dt>
              <dd>
                <code>
                  {d.image}:{d.tag}
                </code>
                {d.preset ? <span className="subtle"> (preset {d.preset})</span> : null}
              </dd>
              <dt>Command</dt>
              <dd>{d.command && d.command.length > 0 ? <code>{d.command.join(' ')}</code> : <span className="subtle">the image's entrypoint</span>}</dd>
            </>
          ) : (
            <>
              <dt>Model</dt>
              <dd>
                <code>{d.model}</code>
                {d.served_model_name ? <span className="subtle"> served as {d.served_model_name}</span> : null}
              </dd>
              <dt>Serving mode</dt>
              <dd>{d.serving_mode}</dd>
            </>
          )}
          <dt>Cluster</dt>
          <dd>{cluster ? cluster.name : d.cluster_id}</dd>
          {disaggregated && d.worker_pools ? (
            <>
              <dt>Prefill pool</dt>
              <dd>
                {d.worker_pools.prefill.replicas} × {hardwareText(d.worker_pools.prefill.hardware_instance_id)}
              </dd>
              <dt>Decode pool</dt>
              <dd>
                {d.worker_pools.decode.replicas} × {hardwareText(d.worker_pools.decode.hardware_instance_id)}
              </dd>
            </>
          ) : (
            <>
              <dt>Hardware</dt>
              <dd>{hardwareText(d.hardware_instance_id)}{d.family === 'orchestrated' ? ', per Worker replica' : ''}</dd>
              <dt>Scaling</dt>
              <dd>
                {d.min_replicas === d.max_replicas ? `fixed at ${d.min_replicas}` : `${d.min_replicas} to ${d.max_replicas} replicas`}
                {', target concurrency '}
                {(d.family === 'general' ? d.max_concurrency : d.concurrency) ?? 'none'}
                {`, cooldown ${d.cooldown_period} s`}
              </dd>
              <dt>Autoscaling signal</dt>
              <dd data-testid="autoscaling-signal">
                {d.min_replicas === d.max_replicas
                  ? 'none (fixed size)'
                  : describeTarget(d.autoscaling_metric ?? 'concurrency', d.autoscaling_metric && d.autoscaling_metric !== 'concurrency' ? (d.autoscaling_target ?? null) : ((d.family === 'general' ? d.max_concurrency : d.concurrency) ?? null))}
              </dd>
              <dt>Autoscaler</dt>
              <dd data-testid="autoscaler-desired">
                {autoscaler !== null
                  ? autoscaler
                  : activity.error
                    ? activity.error.message
                    : 'no decision yet'}
              </dd>
            </>
          )}
          <dt>Traffic</dt>
          <dd data-testid="traffic-split">
            {d.traffic_is_default !== false ? `everything to the newest revision (${d.revision})` : splitWords(sharesOf(d))}
            <span className="subtle">{`; rollout ${rolloutModeOf(d)}`}</span>
          </dd>
          <dt>Protection</dt>
          <dd>
            {d.endpoint_token_id !== null ? `Bearer token (vault token ${d.endpoint_token_id})` : null}
            {d.endpoint_token_id !== null && d.client_certificate_id !== null ? ' and ' : null}
            {d.client_certificate_id !== null ? (
              <>
                client certificate {d.client_certificate_id}{' '}
                <Allowed action="certificate.key" inline>
                  <button type="button" className="button small" onClick={downloadPem}>
                    Download .pem
                  </button>
                </Allowed>
              </>
            ) : null}
            {pemError && <span className="field-error"> {pemError}</span>}
          </dd>
          <dt>Logging</dt>
          <dd>{d.enable_logging ? 'on' : 'off (this revision has no console logs)'}</dd>
        </dl>
      </div>

      <h2>Component health</h2>
      <table aria-label="Component health">
        <thead>
          <tr>
            <th scope="col">Component</th>
            <th scope="col" className="num">Ready</th>
            <th scope="col" className="num">Desired</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(d.components).map(([name, c]) => (
            <tr key={name}>
              <td>{name}</td>
              <td className="num">{c.ready}</td>
              <td className="num">{c.desired}</td>
            </tr>
          ))}
        </tbody>
      </table>

      {(replicas.data?.items.length ?? 0) > 0 && (
        <>
          <h2>Replicas</h2>
          <table aria-label="Replicas">
            <thead>
              <tr>
                <th scope="col">Replica</th>
                <th scope="col">Component</th>
                <th scope="col" className="num">Revision</th>
                <th scope="col">State</th>
                <th scope="col" className="num">Restarts</th>
              </tr>
            </thead>
            <tbody>
              {replicas.data!.items.map((r) => (
                <tr key={r.name}>
                  <td>{r.name}</td>
                  <td>{r.component}</td>
                  <td className="num">{r.revision}</td>
                  <td>{r.state}</td>
                  <td className="num">{r.restarts}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}

      <RevisionCompare d={d} />

      <h2>Call it</h2>
      <p className="subtle">
        {shownToken !== null ? (
          <>The endpoint token shown at the top is filled in below until you dismiss it. </>
        ) : d.endpoint_token_id !== null ? (
          <>
            Set <code>{TOKEN_VARIABLE}</code> to the endpoint's bearer token (shown once, when it was made).{' '}
          </>
        ) : null}
        The snippets trust the platform CA as <code>{CA_FILE}</code>
        {d.client_certificate_id !== null ? (
          <>
            {' '}and present the client certificate and key as <code>{pemFile}</code>
          </>
        ) : null}
        : the curl snippet fetches the CA itself (its first line); for the SDK ones, save {d.client_certificate_id !== null ? 'them' : 'it'} beside the
        snippet{d.client_certificate_id !== null ? ' (and the .pem for curl too)' : ''}. With an operator's own certificate on the gateway, leave the CA out.
      </p>
      <p>
        <button
          type="button"
          className="button small"
          onClick={() => {
            setCaError(null);
            download('/ca.crt', CA_FILE, CA_FILE).catch((e: Error) => setCaError(e.message));
          }}
        >
          Download {CA_FILE}
        </button>
        {d.client_certificate_id !== null ? (
          <>
            {' '}
            <Allowed action="certificate.key" inline>
              <button type="button" className="button small" onClick={downloadPem}>
                Download {pemFile}
              </button>
            </Allowed>
          </>
        ) : null}
        {caError && <span className="field-error"> {caError}</span>}
      </p>
      {snippets.map((s) => (
        <figure key={s.kind} aria-label={s.title} className="snippet">
          <h3>
            {s.title} <CopyButton value={s.text} label="Copy snippet" />
          </h3>
          <pre>{s.text}</pre>
        </figure>
      ))}

      <RevisionHistory d={d} onChanged={onChanged} />
    </div>
  );
}
