// Who may deploy a host command: the platform admin; owners and developers (and accounts from
// before projects, `member`) only when the operator opened it; viewers and callers without a
// role never; nobody where there is no sandbox unless the operator accepts that; anyone under
// the Docker runtime, where nothing is a host command.

import { describe, expect, it } from 'vitest';
import { hostCommandRefusal, type HostCommandPolicy } from './host-commands.js';

const closed: HostCommandPolicy = { sandboxed: true, allowUnsandboxed: false, allowMembers: false };
const opened: HostCommandPolicy = { ...closed, allowMembers: true };

describe('hostCommandRefusal', () => {
  it('lets the admin, and owners and developers only when opened; never a viewer', () => {
    expect(hostCommandRefusal(closed, 'admin')).toBeNull();
    for (const role of ['owner', 'developer', 'member', 'viewer', null] as const) expect(hostCommandRefusal(closed, role)?.reason, String(role)).toBe('role');
    for (const role of ['owner', 'developer', 'member'] as const) expect(hostCommandRefusal(opened, role), role).toBeNull();
    for (const role of ['viewer', null] as const) expect(hostCommandRefusal(opened, role)?.reason, String(role)).toBe('role');
  });

  it('refuses everyone without a sandbox unless the operator accepts it; nothing is one in containers', () => {
    expect(hostCommandRefusal({ ...opened, sandboxed: false }, 'admin')?.reason).toBe('no_sandbox');
    expect(hostCommandRefusal({ ...closed, sandboxed: false, allowUnsandboxed: true }, 'admin')).toBeNull();
    expect(hostCommandRefusal({ ...closed, containers: true }, 'viewer')).toBeNull();
  });
});
