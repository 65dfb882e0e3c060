// The DeviceRequests a container's HostConfig carries for its GPUs, per driver.

import { describe, expect, it } from 'vitest';
import { gpuHostConfig } from './gpu-request.js';

describe('gpuHostConfig', () => {
  it('nvidia: the ids as they are, the gpu capability, no Count', () => {
    expect(gpuHostConfig(['0', '3'], 'nvidia')).toEqual({
      DeviceRequests: [{ Driver: 'nvidia', DeviceIDs: ['0', '3'], Capabilities: [['gpu']] }],
    });
    expect(gpuHostConfig(['0'], 'nvidia').DeviceRequests?.[0]).not.toHaveProperty('Count');
  });

  it('cdi: fully qualified nvidia.com/gpu device names', () => {
    expect(gpuHostConfig(['1', 'GPU-8f1c2d34'], 'cdi')).toEqual({
      DeviceRequests: [{ Driver: 'cdi', DeviceIDs: ['nvidia.com/gpu=1', 'nvidia.com/gpu=GPU-8f1c2d34'], Capabilities: [] }],
    });
  });

  it('a CPU-only container asks for no devices', () => {
    expect(gpuHostConfig([], 'nvidia')).toEqual({});
    expect(gpuHostConfig([], 'cdi')).toEqual({});
  });

  it('does not share the caller\'s array', () => {
    const ids = ['0'];
    const request = gpuHostConfig(ids, 'nvidia').DeviceRequests?.[0];
    ids.push('1');
    expect(request?.DeviceIDs).toEqual(['0']);
  });
});
