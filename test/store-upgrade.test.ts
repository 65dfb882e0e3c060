// A data directory left by `infergate serve` of a release before the journal (one
// state.json, format 1: test/fixtures/serve-v1, a reference-engine deployment that was
// serving when that service stopped) upgrades in place when this release starts on it: the
// state-* files replace state.json, which is kept aside, and the deployment serves again
// through the gateway with the bearer token it was made with.

import { chmod, copyFile, mkdir, mkdtemp, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { killLeftoverReplicas, platformDirs, startPlatform, type Platform } from './helpers/platform.js';
import { removeTempDir } from './helpers/temp-dirs.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/serve-v1/state.json', import.meta.url));
/** What the fixture's deployment was made with (test/fixtures/README.md). */
const NAME = 'legacy';
const TOKEN = 'tok-legacy-0123456789';

let root: string | undefined;
let platform: Platform | undefined;

afterAll(async () => {
  if (platform) {
    platform.serve.kill('SIGKILL');
    await platform.serve.exited;
    killLeftoverReplicas(platform.dataDir);
  }
  if (root) await removeTempDir(root);
});

describe('a data directory from a release before the journal', () => {
  it('upgrades in place when the service starts, and its endpoint serves', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'infergate-store-upgrade-'));
    const dirs = await platformDirs(root, 'upgrade');
    await mkdir(dirs.dataDir, { recursive: true, mode: 0o700 });
    await copyFile(FIXTURE, path.join(dirs.dataDir, 'state.json'));
    await chmod(path.join(dirs.dataDir, 'state.json'), 0o600);

    platform = await startPlatform(dirs);
    const files = await readdir(dirs.dataDir);
    expect(files).toEqual(expect.arrayContaining(['state-00000001.snapshot', 'state-00000001.journal', 'state.json.migrated']));
    expect(files).not.toContain('state.json');

    const list = await platform.call('GET', '/deployments/general');
    expect(list.body.items.map((d: { id: number; name: string }) => [d.id, d.name])).toEqual([[1, NAME]]);
    await platform.waitFor(1, (d) => d.status === 'ready', 30_000, `${NAME} ready after the upgrade`);
    const completion = await platform.client(NAME, TOKEN).chat.completions.create({ model: 'sim/model', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 3 });
    expect(completion.system_fingerprint).toMatch(new RegExp(`^${NAME}-r1-`));
    // Ids go on after the upgraded ones: a new deployment is number 2.
    const created = await platform.call('POST', '/deployments/general', { name: 'after', cluster_id: 1, hardware_instance_id: 1, image: 'infergate/reference-engine', tag: 'openai', container_port: 8000, health_check_path: '/health', endpoint_bearer_token: 'tok-after-0123456789', min_replicas: 0, max_replicas: 1, max_concurrency: 4 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.id).toBe(2);

    expect(await platform.stop()).toBe(0);
    platform = undefined;
  });
});
