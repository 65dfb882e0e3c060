// Owns what the two create pages share, so each page says only what its family adds: the form's
// state (name, family values, endpoint protection, flow control), the browser's check of the
// API's rules, the submit (token made on submit, POST, refusal placed next to its field with
// every value kept), the panels both families have (hardware, scaling, endpoint protection,
// flow control), and the frame around them (heading, Back, the statement of what is created,
// load errors, the form-level problem, Create and Cancel).

import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import type { Cluster, Family, Items, VaultToken } from '../api/types';
import { FormError, type Problems } from '../components/form';
import { usePoll, type Polled } from '../hooks';
import { createDeployment, RefusedCreate } from '../forms/create-deployment';
import { EndpointProtection } from '../forms/endpoint-protection';
import { FlowControlFields } from '../forms/flow-control-fields';
import { defaultPlacement, HardwareFields } from '../forms/hardware-fields';
import { TextInput } from '../forms/inputs';
import { ScalingFields } from '../forms/scaling-fields';
import { bodySignalProblems } from '../forms/signal';
import { keepFocusOnPress, useProblems, type FormProblems } from '../forms/use-problems';
import { authPlan, emptyAuth, emptyFlowControl, flowControlBody, type AuthValues, type Built, type CommonValues, type FlowControlValues } from '../forms/values';

export interface CreateFormSpec<V extends CommonValues, B extends object> {
  family: Family;
  empty: () => V;
  build: (values: V) => Built<B>;
  /** Body fields the page sets, not a control (orchestrated: serving_mode). */
  fixed?: Partial<B>;
  check: (body: B, opts: { mode: 'create'; tokenBound: boolean }) => Problems;
  /** Fields with a control on the page; a refusal naming any other goes to the form-level error. */
  placed: readonly string[];
}

export interface CreateForm<V extends CommonValues> {
  clusters: Polled<Items<Cluster>>;
  name: string;
  values: V;
  set: (patch: Partial<V>) => void;
  problems: Problems;
  /** What CreateFormFrame needs to run the form. */
  frame: { fp: FormProblems; busy: boolean; submit: (e: FormEvent) => Promise<void> };
  /** The parts both families show; each page places them in its own order. */
  parts: { name: (hint: string) => ReactNode; hardware: ReactNode; scaling: ReactNode; protection: ReactNode; flowControl: ReactNode };
}

/** A titled panel of the form. */
export function Panel({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="panel">
      <h2>{title}</h2>
      {children}
    </div>
  );
}

export function useCreateForm<V extends CommonValues, B extends object>(spec: CreateFormSpec<V, B>): CreateForm<V> {
  const { family } = spec;
  const clusters = usePoll<Items<Cluster>>('/clusters', 0);
  const vault = usePoll<Items<VaultToken>>('/vault/tokens', 0);
  const [name, setName] = useState('');
  const [values, setValues] = useState<V>(spec.empty);
  const [auth, setAuth] = useState<AuthValues>(() => emptyAuth('new'));
  const [flow, setFlow] = useState<FlowControlValues>(emptyFlowControl);
  const [busy, setBusy] = useState(false);

  // The first cluster that can host the family and its first hardware type, once the catalog has loaded.
  useEffect(() => {
    const items = clusters.data?.items;
    if (items) setValues((v) => (v.cluster_id === null ? { ...v, ...defaultPlacement(items, family) } : v));
  }, [clusters.data, family]);

  const set = (patch: Partial<V>) => setValues((v) => ({ ...v, ...patch }));
  const built = spec.build(values);
  const flowBuilt = flowControlBody(flow);
  const plan = authPlan(auth, vault.data?.items ?? [], null);
  const body = { name: name.trim(), ...spec.fixed, ...built.body, ...plan.body, ...flowBuilt.body } as B;
  const client = { ...bodySignalProblems(body), ...spec.check(body, { mode: 'create', tokenBound: plan.tokenBound }), ...plan.problems, ...built.problems, ...flowBuilt.problems };
  const fp = useProblems(client, body as Record<string, unknown>, spec.placed);
  const p = fp.shown;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy || !fp.submit()) return;
    setBusy(true);
    try {
      await createDeployment(family, name, body, auth, plan.createOnSubmit, (token) => setAuth((a) => ({ ...a, created: token })));
    } catch (err) {
      if (err instanceof RefusedCreate) fp.refused(err.cause, err.sent as Record<string, unknown>);
      else fp.refused(err, body as Record<string, unknown>);
    } finally {
      setBusy(false);
    }
  };

  const parts = {
    name: (hint: string) => <TextInput field="name" problems={p} value={name} onChange={setName} hint={hint} />,
    hardware: (
      <Panel title="Hardware">
        <HardwareFields family={family} clusters={clusters.data?.items ?? null} clusterId={values.cluster_id} hardwareId={values.hardware_instance_id} onChange={(placement) => set(placement as Partial<V>)} problems={p} />
      </Panel>
    ),
    scaling: (
      <Panel title="Scaling">
        <ScalingFields family={family} values={values.scaling} onChange={(s) => set({ scaling: { ...values.scaling, ...s } } as Partial<V>)} problems={p} />
      </Panel>
    ),
    protection: (
      <EndpointProtection auth={auth} onChange={(a) => setAuth((cur) => ({ ...cur, ...a }))} vault={vault.data?.items ?? null} current={null} endpointName={name} problems={p} submitVerb="Create" />
    ),
    flowControl: (
      <Panel title="Flow control">
        <FlowControlFields values={flow} onChange={(f) => setFlow((v) => ({ ...v, ...f }))} problems={p} />
      </Panel>
    ),
  };
  return { clusters, name, values, set, problems: p, frame: { fp, busy, submit }, parts };
}

/** The page around a create form: heading and Back, what the page creates, load errors, then the form's panels and its Create and Cancel. */
export function CreateFormFrame({
  title,
  statement,
  errors,
  frame,
  children,
}: {
  title: string;
  statement: ReactNode;
  /** Why the form cannot work as it should (a catalog that did not load); null where fine. */
  errors: ReadonlyArray<string | null>;
  frame: CreateForm<CommonValues>['frame'];
  children: ReactNode;
}) {
  const { fp, busy, submit } = frame;
  return (
    <section>
      <div className="page-head">
        <h1>{title}</h1>
        <div className="actions">
          <a className="button" href="#/deployments/new">
            Back
          </a>
        </div>
      </div>
      {statement}
      {errors.map((m, i) => (
        <FormError key={i} message={m} />
      ))}
      <form noValidate onSubmit={(e) => void submit(e)} onBlur={fp.onBlur}>
        {children}
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
