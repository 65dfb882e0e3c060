// The GPU allocator's one rule (a GPU has at most one owner) under interleaved acquire and
// release, adoption of running containers, the `--gpus` flag, and reading nvidia-smi.

import { describe, expect, it } from 'vitest';
import { discoverGpus, GpuAllocator, parseGpuList, type RunFile } from './gpu-allocator.js';

describe('GpuAllocator', () => {
  it('hands out the lowest free GPUs first, numbering 10 after 9', () => {
    const gpus = new GpuAllocator(['10', '2', '0', '9', '1']);
    expect(gpus.acquire('a', 2)).toEqual(['0', '1']);
    expect(gpus.acquire('b', 2)).toEqual(['2', '9']);
    expect([gpus.total, gpus.free]).toEqual([5, 1]);
    expect(gpus.holder('9')).toBe('b');
    expect(gpus.holder('10')).toBeNull();
  });

  it('takes nothing when too few are free; 0 GPUs is an empty list', () => {
    const gpus = new GpuAllocator(['0', '1', '2']);
    gpus.acquire('a', 2);
    expect(gpus.acquire('b', 2)).toBeNull();
    expect(gpus.free).toBe(1);
    expect(gpus.acquire('cpu-only', 0)).toEqual([]);
    expect(gpus.free).toBe(1);
    expect(() => gpus.acquire('c', -1)).toThrow(RangeError);
    expect(() => gpus.acquire('c', 1.5)).toThrow(RangeError);
  });

  it('release frees only the owner\'s GPUs and is idempotent', () => {
    const gpus = new GpuAllocator(['0', '1', '2', '3']);
    gpus.acquire('a', 2);
    gpus.acquire('b', 1);
    gpus.release('a');
    gpus.release('a');
    gpus.release('nobody');
    expect(gpus.free).toBe(3);
    expect(gpus.holder('2')).toBe('b');
    expect(gpus.acquire('c', 3)).toEqual(['0', '1', '3']);
  });

  it('never gives one GPU to two owners under interleaved acquire and release', () => {
    const devices = Array.from({ length: 8 }, (_, i) => String(i));
    const gpus = new GpuAllocator(devices);
    const held = new Map<string, string[]>();
    const random = seeded(42);
    for (let step = 0; step < 2_000; step++) {
      const owner = `r${Math.floor(random() * 6)}`;
      if (random() < 0.55) {
        const got = gpus.acquire(owner, Math.floor(random() * 4));
        if (got) held.set(owner, [...(held.get(owner) ?? []), ...got]);
      } else {
        gpus.release(owner);
        held.delete(owner);
      }
      expectConsistent(gpus, devices, held);
    }
  });

  it('claim records what adopted containers hold and reports, not steals, conflicts', () => {
    const gpus = new GpuAllocator(['0', '1', '2', '3']);
    expect(gpus.claim('old-a', ['0', '1'])).toEqual([]);
    expect(gpus.claim('old-b', ['1', '2', '7'])).toEqual(['1']);
    expect(gpus.holder('1')).toBe('old-a');
    expect(gpus.holder('2')).toBe('old-b');
    expect(gpus.holder('7')).toBeNull();
    expect(gpus.claim('old-a', ['0'])).toEqual([]);
    expect(gpus.acquire('new', 1)).toEqual(['3']);
    expect(gpus.acquire('new', 1)).toBeNull();
  });

  it('refuses a device list with a GPU twice', () => {
    expect(() => new GpuAllocator(['0', '0'])).toThrow(/GPU 0/);
  });
});

describe('parseGpuList', () => {
  it('reads indexes and UUIDs, trimmed, in the flag\'s order', () => {
    expect(parseGpuList(' 3, 1 ,2')).toEqual(['3', '1', '2']);
    expect(parseGpuList('GPU-8f1c2d34-aaaa-bbbb-cccc-0123456789ab,MIG-1a2b')).toEqual(['GPU-8f1c2d34-aaaa-bbbb-cccc-0123456789ab', 'MIG-1a2b']);
  });

  it.each([
    ['', /--gpus must list at least one/],
    ['0,,1', /--gpus has an empty entry at position 2/],
    ['0,1,', /--gpus has an empty entry at position 3/],
    ['0,1,0', /--gpus lists GPU 0 more than once/],
    ['all', /--gpus lists GPUs one by one/],
    ['0,None', /--gpus lists GPUs one by one/],
    ['0;1', /--gpus: "0;1" is not a GPU index or UUID/],
    ['nvidia.com/gpu=0', /--gpus: .* is not a GPU index or UUID/],
  ])('refuses %j', (flag, message) => {
    expect(() => parseGpuList(flag)).toThrow(message);
  });
});

describe('discoverGpus', () => {
  it('runs nvidia-smi without a shell and reads one index a line', async () => {
    const calls: [string, string[]][] = [];
    const run: RunFile = (file, args) => {
      calls.push([file, args]);
      return Promise.resolve('0\n1\r\n2\n3\n\n');
    };
    expect(await discoverGpus(run)).toEqual({ ids: ['0', '1', '2', '3'], source: 'nvidia-smi --query-gpu=index' });
    expect(calls).toEqual([['nvidia-smi', ['--query-gpu=index', '--format=csv,noheader']]]);
  });

  it('a host without nvidia-smi has no GPUs', async () => {
    const run = failing({ code: 'ENOENT', message: 'spawn nvidia-smi ENOENT' });
    expect(await discoverGpus(run)).toEqual({ ids: [], source: 'no nvidia-smi on this host' });
  });

  it('a failing nvidia-smi says why in its first line', async () => {
    const stderr = 'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.\nMake sure that the latest driver is installed.\n';
    const found = await discoverGpus(failing({ code: 9, stderr, stdout: '', message: 'Command failed' }));
    expect(found).toEqual({ ids: [], source: 'nvidia-smi failed (exit 9): NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.' });
    const onStdout = await discoverGpus(failing({ code: 6, stderr: '', stdout: 'No devices were found\n', message: 'Command failed' }));
    expect(onStdout.source).toBe('nvidia-smi failed (exit 6): No devices were found');
  });

  it('a hung nvidia-smi is reported as such', async () => {
    const found = await discoverGpus(failing({ killed: true, signal: 'SIGTERM', code: null, stderr: '', message: 'Command failed' }));
    expect(found.ids).toEqual([]);
    expect(found.source).toMatch(/did not answer within/);
  });

  it('output that is not indexes gives no GPUs rather than nonsense ids', async () => {
    expect(await discoverGpus(() => Promise.resolve('index\n0\n'))).toEqual({ ids: [], source: 'nvidia-smi printed "index" where a GPU index was expected' });
    expect(await discoverGpus(() => Promise.resolve('\n'))).toEqual({ ids: [], source: 'nvidia-smi listed no GPUs' });
  });
});

function expectConsistent(gpus: GpuAllocator, devices: string[], held: Map<string, string[]>): void {
  const owners = new Map<string, string>();
  for (const [owner, ids] of held) {
    for (const id of ids) {
      expect(owners.get(id), `GPU ${id} given to ${owner} and ${owners.get(id)}`).toBeUndefined();
      owners.set(id, owner);
    }
  }
  for (const id of devices) expect(gpus.holder(id)).toBe(owners.get(id) ?? null);
  expect(gpus.free).toBe(devices.length - owners.size);
}

function failing(fields: Record<string, unknown>): RunFile {
  return () => Promise.reject(Object.assign(new Error(String(fields.message)), fields));
}

/** A small deterministic PRNG (mulberry32), so a failing interleaving can be replayed. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
