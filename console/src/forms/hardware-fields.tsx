// Owns the placement controls: the cluster first, then a hardware type of that cluster, each
// option saying how many instances are free and how many GPUs one instance has (GET /clusters).
// Orchestrated deployments need a cluster with the orchestration operator, so the others are
// listed but cannot be chosen. In Settings the cluster is fixed (clone to move).

import type { Cluster } from '../api/types';
import type { Problems } from '../components/form';
import { Select, TextInput } from './inputs';

export function hardwareLabel(h: Cluster['hardware'][number]): string {
  const gpus = `${h.gpus_per_instance} GPU${h.gpus_per_instance === 1 ? '' : 's'} per instance`;
  return `${h.name}: ${h.instances_free} of ${h.instances} instances free, ${gpus}`;
}

export const canHost = (c: Cluster, family: 'general' | 'orchestrated'): boolean => family === 'general' || c.orchestration_enabled;

/** The defaults: the first cluster that can host the family and its first hardware type. */
export function defaultPlacement(clusters: readonly Cluster[], family: 'general' | 'orchestrated'): { cluster_id: number | null; hardware_instance_id: number | null } {
  const cluster = clusters.find((c) => canHost(c, family));
  return { cluster_id: cluster?.id ?? null, hardware_instance_id: cluster?.hardware[0]?.id ?? null };
}

export function HardwareFields({
  family,
  clusters,
  clusterId,
  hardwareId,
  onChange,
  problems,
  clusterFixed,
}: {
  family: 'general' | 'orchestrated';
  clusters: readonly Cluster[] | null;
  clusterId: number | null;
  hardwareId: number | null;
  onChange: (placement: { cluster_id: number | null; hardware_instance_id: number | null }) => void;
  problems: Problems;
  /** Settings: the cluster cannot change through PATCH. */
  clusterFixed?: boolean;
}) {
  if (clusters === null) return <p className="subtle">Loading clusters…</p>;
  const cluster = clusters.find((c) => c.id === clusterId);
  const hardwareHint =
    family === 'general' ? 'Every replica runs on one instance of this type.' : 'Applies to each Worker replica.';
  return (
    <>
      {clusterFixed ? (
        <TextInput field="cluster_id" problems={problems} value={cluster?.name ?? `cluster ${clusterId ?? '?'}`} hint="Cannot change on an existing deployment: clone it instead." />
      ) : (
        <Select
          field="cluster_id"
          problems={problems}
          value={clusterId === null ? '' : String(clusterId)}
          hint={family === 'orchestrated' ? 'Only clusters with orchestration enabled can run orchestrated deployments.' : undefined}
          onChange={(v) => {
            const next = clusters.find((c) => String(c.id) === v);
            onChange({ cluster_id: next?.id ?? null, hardware_instance_id: next?.hardware[0]?.id ?? null });
          }}
          options={[
            ...(clusterId === null ? [{ value: '', label: 'Choose a cluster', disabled: true }] : []),
            ...clusters.map((c) => ({
              value: String(c.id),
              label: canHost(c, family) ? c.name : `${c.name} (orchestration not enabled)`,
              disabled: !canHost(c, family),
            })),
          ]}
        />
      )}
      <Select
        field="hardware_instance_id"
        problems={problems}
        value={hardwareId === null ? '' : String(hardwareId)}
        hint={hardwareHint}
        disabled={!cluster}
        onChange={(v) => onChange({ cluster_id: clusterId, hardware_instance_id: v === '' ? null : Number(v) })}
        options={[
          ...(hardwareId === null || !cluster?.hardware.some((h) => h.id === hardwareId) ? [{ value: hardwareId === null ? '' : String(hardwareId), label: 'Choose a hardware type', disabled: true }] : []),
          ...(cluster?.hardware ?? []).map((h) => ({ value: String(h.id), label: hardwareLabel(h) })),
        ]}
      />
    </>
  );
}
