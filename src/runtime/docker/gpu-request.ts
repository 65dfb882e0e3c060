// Owns how a container asks Docker Engine for its GPUs: the HostConfig.DeviceRequests entry
// for the allocator's ids, through the NVIDIA Container Toolkit's `nvidia` driver or through
// CDI (`nvidia.com/gpu=<id>` device names, Docker 25+ with CDI enabled).
//
// No NVIDIA_VISIBLE_DEVICES is set on the container: with a device request the daemon (nvidia
// driver) or the CDI spec's container edits (cdi) set it from exactly these ids. A value of
// our own could only disagree with the request, and the toolkit would then expose other GPUs
// than the allocator handed out.

export type GpuMode = 'nvidia' | 'cdi';

export interface DeviceRequest {
  Driver: string;
  Count?: number;
  DeviceIDs?: string[];
  Capabilities: string[][];
}

export interface GpuHostConfig {
  DeviceRequests?: DeviceRequest[];
}

const CDI_GPU_KIND = 'nvidia.com/gpu';

/** The HostConfig fields that give a container exactly `ids`; none for a CPU-only container. */
export function gpuHostConfig(ids: readonly string[], mode: GpuMode): GpuHostConfig {
  if (ids.length === 0) return {};
  return { DeviceRequests: [mode === 'cdi' ? cdiRequest(ids) : nvidiaRequest(ids)] };
}

// Count stays unset: the daemon refuses a request that gives both Count and DeviceIDs.
function nvidiaRequest(ids: readonly string[]): DeviceRequest {
  return { Driver: 'nvidia', DeviceIDs: [...ids], Capabilities: [['gpu']] };
}

// The cdi driver is picked by name and takes fully qualified device names; capabilities
// only select a driver when none is named, so there are none.
function cdiRequest(ids: readonly string[]): DeviceRequest {
  return { Driver: 'cdi', DeviceIDs: ids.map((id) => `${CDI_GPU_KIND}=${id}`), Capabilities: [] };
}
