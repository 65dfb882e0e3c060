// Owns editing a general or aggregated orchestrated deployment: the create form's controls
// prefilled from the deployment (name, cluster and serving mode fixed: clone instead), the
// traffic between its revisions and the rollout mode (forms/traffic-fields), the endpoint
// limits (flow control included), and before saving a statement of what the change will do,
// computed from the PATCH body (only the changed fields) by spec-diff and, for traffic, by
// forms/traffic. One Save sends a spec change and a new split together. Save asks once,
// repeating that statement, then PATCHes and says what happened. A refusal stays next to its field.

import { useEffect, useState, type FormEvent } from 'react';
import { api } from '../api/client';
import type { Cluster, Deployment, Items, RegistryCredential, RolloutMode, VaultToken } from '../api/types';
import { ConfirmDialog } from '../components/confirm';
import { SecretOnce } from '../components/copy';
import { FormError, type Problems } from '../components/form';
import { usePoll } from '../hooks';
import type { Account } from '../session';
import { createVaultToken, EndpointProtection, tokenNameFor } from './endpoint-protection';
import { FlowControlFields } from './flow-control-fields';
import { ContainerFields, RuntimeFields } from './general-fields';
import { HardwareFields } from './hardware-fields';
import { TextInput } from './inputs';
import { ModelFields, WorkerFields } from './orchestrated-fields';
import { BODY_LIMIT_MAX, BODY_LIMIT_MIN, checkGeneral, checkOrchestrated, registryMoveProblems, FIRST_RESPONSE_MAX_SECONDS, type GeneralBody, type OrchestratedBody } from './rules';
import { ScalingFields } from './scaling-fields';
import { bodySignalProblems } from './signal';
import { classifyPatch, diffBodies, type Body, type PatchPlan } from './spec-diff';
import { TrafficFields } from './traffic-fields';
import { rolloutModeOf, rowsFrom, savedWords, settingsStatement, storedTrafficBody, trafficBody, type TrafficRow } from './traffic';
import { labelFor } from './labels';
import { keepFocusOnPress, useProblems } from './use-problems';
import {
  authPlan,
  generalBody,
  generalFrom,
  limitsBody,
  limitsFrom,
  orchestratedBody,
  orchestratedFrom,
  type AuthValues,
  type CreatedToken,
  type GeneralValues,
  type LimitsValues,
  type OrchestratedValues,
  type WithLimits,
} from './values';

const PLACED = [
  'name', 'cluster_id', 'serving_mode', 'hardware_instance_id', 'preset', 'image', 'tag', 'container_port', 'protocol',
  'health_check_path', 'registry_username', 'registry_password', 'registry_credential_id', 'enable_logging', 'enable_model_caching', 'session_affinity', 'routing_policy',
  'command', 'metrics_port', 'metrics_path', 'env', 'secret_env', 'config_file', 'annotations', 'min_replicas', 'max_replicas',
  'max_concurrency', 'concurrency', 'cooldown_period', 'model', 'served_model_name', 'model_hub_token', 'extra_args',
  'endpoint_bearer_token', 'endpoint_token_id', 'private_endpoint', 'max_request_body_bytes', 'first_response_timeout_seconds', 'rate_limit', 'flow_control',
  'autoscaling_metric', 'autoscaling_target', 'traffic', 'rollout_mode',
];

type Stored = Deployment & WithLimits;

const authFrom = (d: Deployment): AuthValues => ({
  choice: d.endpoint_token_id !== null ? 'keep' : 'none',
  value: '',
  created: null,
  private_endpoint: d.private_endpoint,
});

/** The deployment as the body the form would send unchanged: the left side of every diff. */
function storedBody(d: Stored): Body {
  const spec = d.family === 'general' ? generalBody(generalFrom(d)).body : orchestratedBody(orchestratedFrom(d)).body;
  return { ...spec, private_endpoint: d.private_endpoint, ...limitsBody(limitsFrom(d)).body, traffic: storedTrafficBody(d), rollout_mode: rolloutModeOf(d) };
}

export function SettingsEditor({ deployment, account, onChanged }: { deployment: Stored; account: Account; onChanged: () => void }) {
  const d = deployment;
  const general = d.family === 'general';
  const clusters = usePoll<Items<Cluster>>('/clusters', 0);
  const vault = usePoll<Items<VaultToken>>('/vault/tokens', 0);
  const registry = usePoll<Items<RegistryCredential>>(general ? '/vault/registry-credentials' : null, 0);
  // The deployment the values were filled from: refilled when it changes under a form with no edits.
  const [baseline, setBaseline] = useState<Stored>(d);
  const [gv, setGv] = useState<GeneralValues>(() => generalFrom(d));
  const [ov, setOv] = useState<OrchestratedValues>(() => orchestratedFrom(d));
  const [limits, setLimits] = useState<LimitsValues>(() => limitsFrom(d));
  const [auth, setAuth] = useState<AuthValues>(() => authFrom(d));
  const [rows, setRows] = useState<TrafficRow[]>(() => rowsFrom(d));
  const [mode, setMode] = useState<RolloutMode>(() => rolloutModeOf(d));
  const [confirming, setConfirming] = useState<PatchPlan | null>(null);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const [newToken, setNewToken] = useState<CreatedToken | null>(null);

  const fill = (from: Stored) => {
    setBaseline(from);
    setGv(generalFrom(from));
    setOv(orchestratedFrom(from));
    setLimits(limitsFrom(from));
    setAuth(authFrom(from));
    setRows(rowsFrom(from));
    setMode(rolloutModeOf(from));
  };

  const setG = (patch: Partial<GeneralValues>) => { setGv((v) => ({ ...v, ...patch })); setSaved(null); };
  const setO = (patch: Partial<OrchestratedValues>) => { setOv((v) => ({ ...v, ...patch })); setSaved(null); };

  const spec = general ? generalBody(gv) : orchestratedBody(ov);
  const limitsBuilt = limitsBody(limits);
  const trafficBuilt = trafficBody(rows);
  const trafficOk = Object.keys(trafficBuilt.problems).length === 0;
  const plan = authPlan(auth, vault.data?.items ?? [], d);
  const typed: GeneralBody & OrchestratedBody = { ...spec.body, ...plan.body, ...limitsBuilt.body, rollout_mode: mode };
  if (trafficOk) typed.traffic = trafficBuilt.body;
  // The stored password goes when the username is cleared with no new password ("both or
  // neither"), or when the vault's credentials are chosen instead (never both).
  const ownPairGone = gv.registry_source !== 'own' || (gv.registry_username.trim() === '' && gv.registry_password === '');
  if (general && d.has_registry_password && ownPairGone) typed.registry_password = null;
  // Rows that do not make a list yet still differ from the stored one: Save stays on and shows why.
  const next = (trafficOk ? typed : { ...typed, traffic: rows }) as Body;
  // Stored secrets are not in the deployment's answer, so no diff sees one removed: say it outright.
  const removals: Body = Object.fromEntries((['registry_password', 'model_hub_token'] as const).filter((k) => typed[k] === null).map((k) => [k, null]));
  const patch = { ...diffBodies(storedBody(d), next), ...removals };
  // A token to be created on confirm is a credential change already; its value joins the PATCH then.
  const classified: PatchPlan = { ...classifyPatch(plan.createOnSubmit ? { ...patch, endpoint_bearer_token: '' } : patch, d.revision), patch };
  const patchPlan: PatchPlan = { ...classified, statement: settingsStatement(classified, d, mode, trafficOk ? (trafficBuilt.body ?? null) : undefined) };

  const checkOpts = {
    mode: 'edit' as const,
    tokenBound: plan.tokenBound,
    registryPasswordStored: d.has_registry_password === true && typed.registry_password !== null,
    registryCredentials: registry.data?.items ?? [],
  };
  const checked = { ...typed, ...(plan.certificateKept ? { client_certificate_id: d.client_certificate_id } : {}) };
  const rules = general ? checkGeneral(checked, checkOpts) : checkOrchestrated(checked, checkOpts);
  // An image moved to another registry host: the credentials held are dropped, and the change must say so.
  const moved = general
    ? registryMoveProblems(
        { image: d.image ?? '', registry_username: d.registry_username ?? null, has_registry_password: d.has_registry_password === true, registry_credential_id: d.registry_credential_id ?? null },
        patch,
      )
    : {};
  const client: Problems = { ...rules, ...moved, ...bodySignalProblems(typed), ...plan.problems, ...spec.problems, ...limitsBuilt.problems, ...trafficBuilt.problems };
  const fp = useProblems(client, next, PLACED);
  const p = fp.shown;

  // Refill from the deployment when it changed (a rollback, another client) and nothing is edited here.
  const dirty = Object.keys({ ...diffBodies(storedBody(baseline), next), ...removals }).length > 0 || auth.choice !== authFrom(baseline).choice;
  useEffect(() => {
    if (!dirty && (d.revision !== baseline.revision || d.updated_at !== baseline.updated_at)) fill(d);
    // Only a change of the deployment itself refills; edits here never do.
  }, [d.revision, d.updated_at]);

  const review = (e: FormEvent) => {
    e.preventDefault();
    setSaved(null);
    if (patchPlan.effect === 'none' || !fp.submit()) return;
    setConfirming(patchPlan);
  };

  const save = async () => {
    if (!confirming) return;
    setBusy(true);
    let sent: Body = confirming.patch;
    try {
      let created: CreatedToken | null = null;
      if (plan.createOnSubmit) {
        created = auth.created ?? (await createVaultToken(tokenNameFor(d.name)));
        const token = created;
        setAuth((a) => ({ ...a, created: token }));
        sent = { ...sent, endpoint_bearer_token: created.value };
      }
      const after = await api.patch<Stored>(`/deployments/${d.family}/${d.id}`, sent);
      setConfirming(null);
      fill(after);
      fp.clearRefusal();
      if (created) {
        setNewToken(created);
        // The bound token is named in "Keep the current token": the list must know the new one.
        vault.reload();
      }
      setSaved(savedWords(d, after, confirming));
      onChanged();
    } catch (err) {
      setConfirming(null);
      fp.refused(err, { ...next, ...sent });
    } finally {
      setBusy(false);
    }
  };

  const statement = saved ?? (patchPlan.effect === 'none' ? 'No changes to save.' : patchPlan.statement);
  return (
    <form noValidate onSubmit={review} onBlur={fp.onBlur} aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      {account.role === 'member' && general && (
        <p className="notice">
          As a member you may scale, change endpoint credentials and limits, pause, resume, roll back and delete. A spec change to a deployment that runs a
          host command needs an admin unless the server allows members (the API's answer names the server flag), and so does one to a deployment whose
          containers keep capabilities.
        </p>
      )}
      <div className="panel">
        <h3>Identity</h3>
        <div className="grid2">
          <TextInput field="name" problems={p} value={d.name} hint="Cannot change on an existing deployment: clone it instead (below)." />
          {general ? (
            <TextInput field="preset" problems={p} value={d.preset ?? 'None'} hint="The recipe this deployment was created from; the fields below are what it runs." />
          ) : (
            <TextInput field="serving_mode" problems={p} value="Aggregated" hint="Cannot change on an existing deployment: clone it instead." />
          )}
        </div>
      </div>
      {general ? (
        <>
          <div className="panel">
            <h3>Container</h3>
            <ContainerFields values={gv} set={setG} problems={p} passwordStored={d.has_registry_password === true} credentials={registry.data?.items ?? null} />
            {(d.container_capabilities ?? []).length > 0 && (
              <p className="notice">
                {labelFor('container_capabilities')} kept: {(d.container_capabilities ?? []).join(', ')}. Containers lose them by default; an admin keeps them
                through the API (<code>container_capabilities</code>).
              </p>
            )}
          </div>
          <div className="panel">
            <h3>Hardware</h3>
            <HardwareFields family="general" clusters={clusters.data?.items ?? null} clusterId={gv.cluster_id} hardwareId={gv.hardware_instance_id} onChange={setG} problems={p} clusterFixed />
          </div>
          <div className="panel">
            <h3>Scaling</h3>
            <ScalingFields family="general" values={gv.scaling} onChange={(s) => setG({ scaling: { ...gv.scaling, ...s } })} problems={p} />
          </div>
        </>
      ) : (
        <>
          <div className="panel">
            <h3>Model</h3>
            <ModelFields values={ov} set={setO} problems={p} tokenStored={d.has_model_hub_token === true} />
          </div>
          <div className="panel">
            <h3>Hardware</h3>
            <HardwareFields family="orchestrated" clusters={clusters.data?.items ?? null} clusterId={ov.cluster_id} hardwareId={ov.hardware_instance_id} onChange={setO} problems={p} clusterFixed />
          </div>
          <div className="panel">
            <h3>Scaling</h3>
            <ScalingFields family="orchestrated" values={ov.scaling} onChange={(s) => setO({ scaling: { ...ov.scaling, ...s } })} problems={p} />
          </div>
        </>
      )}
      <TrafficFields
        d={d}
        rows={rows}
        onRows={(r) => { setRows(r); setSaved(null); }}
        mode={mode}
        onMode={(m) => { setMode(m); setSaved(null); }}
        problems={p}
      />
      <EndpointProtection
        auth={auth}
        onChange={(a) => { setAuth((cur) => ({ ...cur, ...a })); setSaved(null); }}
        vault={vault.data?.items ?? null}
        current={d}
        endpointName={d.name}
        problems={p}
        submitVerb="Save"
      />
      {newToken && <SecretOnce title={`Endpoint token "${newToken.name}"`} value={newToken.value} onDismiss={() => setNewToken(null)} />}
      <div className="panel">
        <h3>{general ? 'Runtime' : 'Workers'}</h3>
        {general ? <RuntimeFields values={gv} set={setG} problems={p} /> : <WorkerFields values={ov} set={setO} problems={p} />}
      </div>
      <LimitsFields values={limits} onChange={(l) => { setLimits((v) => ({ ...v, ...l })); setSaved(null); }} problems={p} />
      <FormError message={fp.formError} />
      <p className={patchPlan.effect === 'none' && !saved ? 'subtle' : 'notice'} role="status" aria-live="polite" data-effect={saved ? 'saved' : patchPlan.effect}>
        {statement}
      </p>
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={patchPlan.effect === 'none' || busy} onMouseDown={keepFocusOnPress}>
          Save
        </button>
        <button type="button" className="button" disabled={!dirty} onClick={() => { fill(d); fp.clearRefusal(); setSaved(null); }}>
          Discard changes
        </button>
      </div>
      {confirming && (
        <ConfirmDialog open title={`Save changes to ${d.name}?`} confirmLabel="Save" busy={busy} onConfirm={() => void save()} onCancel={() => setConfirming(null)}>
          <p>{confirming.statement}</p>
        </ConfirmDialog>
      )}
    </form>
  );
}

function LimitsFields({ values, onChange, problems }: { values: LimitsValues; onChange: (patch: Partial<LimitsValues>) => void; problems: Problems }) {
  return (
    <div className="panel">
      <h3>Endpoint limits</h3>
      <p className="subtle">Applied by every gateway at once (no revision). Rate limits count each credential of the endpoint separately; a client over one gets 429.</p>
      <div className="grid2">
        <TextInput
          field="max_request_body_bytes"
          kind="number"
          problems={problems}
          value={values.max_request_body_bytes}
          onChange={(max_request_body_bytes) => onChange({ max_request_body_bytes })}
          hint={`${BODY_LIMIT_MIN} to ${BODY_LIMIT_MAX}; empty: the server's default (16 MiB unless configured).`}
        />
        <TextInput
          field="first_response_timeout_seconds"
          kind="number"
          problems={problems}
          value={values.first_response_timeout_seconds}
          onChange={(first_response_timeout_seconds) => onChange({ first_response_timeout_seconds })}
          hint={`How long a replica may take to start answering: HTTP, its response headers (504 past it); gRPC, its first response message. 1 to ${FIRST_RESPONSE_MAX_SECONDS}; empty: the gateway's default (1 h for HTTP unless configured; none for gRPC).`}
        />
        <TextInput
          field="rate_limit.requests_per_second"
          problems={problems}
          value={values.requests_per_second}
          onChange={(requests_per_second) => onChange({ requests_per_second })}
          hint="Fractions allowed (0.5 is one request every 2 s); empty: no limit."
        />
        <TextInput
          field="rate_limit.tokens_per_minute"
          kind="number"
          problems={problems}
          value={values.tokens_per_minute}
          onChange={(tokens_per_minute) => onChange({ tokens_per_minute })}
          hint="Prompt plus completion tokens; empty: no limit."
        />
      </div>
      <h4>Flow control</h4>
      <FlowControlFields values={values.flow} onChange={(flow) => onChange({ flow: { ...values.flow, ...flow } })} problems={problems} />
    </div>
  );
}
