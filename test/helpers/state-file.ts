// Writes a data directory's state.json in the embedded store's first format (format 1: every
// record in one JSON file) in one go, so a test can start a store holding a thousand
// deployments without a thousand writes. It is the format installations made before the
// journal store have on disk, which every later store reads on upgrade.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { DeploymentRecord, ReplicaRecord } from '../../src/domain/records.js';

/** The deployments' names are claimed in the name index, as the control API claims them. */
export async function writeStateFile(dir: string, records: { deployment?: DeploymentRecord[]; replica?: ReplicaRecord[] }): Promise<void> {
  const deployments = records.deployment ?? [];
  const replicas = records.replica ?? [];
  const envelope = (value: object, unique: Array<{ index: string; key: string }> = []) => ({ version: 1, unique, value });
  const next = (ids: number[]) => Math.max(0, ...ids) + 1;
  const file = {
    format: 1,
    next: { deployment: next(deployments.map((d) => d.id)), replica: next(replicas.map((r) => r.id)) },
    records: {
      deployment: Object.fromEntries(deployments.map((d) => [String(d.id), envelope(d, [{ index: 'deployment-name', key: d.name }])])),
      replica: Object.fromEntries(replicas.map((r) => [String(r.id), envelope(r)])),
    },
    indexes: { 'deployment-name': Object.fromEntries(deployments.map((d) => [d.name, { kind: 'deployment', id: d.id }])) },
    events: {},
  };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(path.join(dir, 'state.json'), JSON.stringify(file) + '\n', { mode: 0o600 });
}
