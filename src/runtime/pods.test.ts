import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/config.js';
import { parseSubnet, type Subnet } from './pod-network.js';
import { detectReplicaNetwork } from './pods.js';
import type { SandboxHost } from './sandbox.js';

const subnet = parseSubnet('10.213.0.0/16') as Subnet;
const sandbox = (identity: SandboxHost['identity']): SandboxHost => ({ bwrap: '/usr/bin/bwrap', setpriv: '/usr/bin/setpriv', identity, system: [], readOnly: [], hidden: [], hiddenFiles: [], seccomp: true });
const rootless = sandbox({ kind: 'rootless', uid: 1000 });

describe('detectReplicaNetwork', () => {
  it('--replica-network host keeps the host network and says what that leaves reachable', () => {
    const d = detectReplicaNetwork({ replicaNetwork: 'host', replicaSubnet: subnet }, sandbox({ kind: 'root', uid: 65534, gid: 65534 }));
    expect(d.pods).toBeNull();
    expect(d.lines.join('\n')).toMatch(/share this host's network \(--replica-network host\).*every other replica's port, the metrics listener/);
  });

  it('auto without a way to make pods falls back with a WARNING naming why and what is not isolated', () => {
    const noSandbox = detectReplicaNetwork({ replicaNetwork: 'auto', replicaSubnet: subnet }, null);
    expect(noSandbox.pods).toBeNull();
    expect(noSandbox.lines[0]).toMatch(/^infergate: WARNING: replicas share this host's network \(no pods: replicas run unsandboxed/);
    const notRoot = detectReplicaNetwork({ replicaNetwork: 'auto', replicaSubnet: subnet }, rootless);
    expect(notRoot.lines[0]).toMatch(/no pods: the service is not root \(rootless\).*a Redis without a password/);
  });

  it('--replica-network pod refuses to start without pods', () => {
    expect(() => detectReplicaNetwork({ replicaNetwork: 'pod', replicaSubnet: subnet }, rootless)).toThrow(ConfigError);
    expect(() => detectReplicaNetwork({ replicaNetwork: 'pod', replicaSubnet: subnet }, rootless)).toThrow(/--replica-network pod: .*not root/);
  });
});
