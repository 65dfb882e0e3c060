// Owns the rule for host commands: a general deployment whose image the runtime does not
// simulate runs the deployment's command on this host (inside the replica sandbox). That is
// code execution on the node, so it is the platform admin's choice unless the operator opens
// it to the projects' owners and developers (viewers never deploy anything), and it is refused outright where no sandbox is available unless the operator
// explicitly allows unsandboxed host commands. Pure: the control API and the runtime both ask it.

import { resolveImage, type ImageMap } from './image-map.js';
import type { ProjectRole } from './access.js';
import type { DeploymentSpec } from './records.js';

export interface HostCommandPolicy {
  /** Replicas run in a sandbox here (own PID namespace, unprivileged user, private view of files). */
  sandboxed: boolean;
  /** `--allow-unsandboxed-host-commands`: the operator accepts host commands with no sandbox. */
  allowUnsandboxed: boolean;
  /** `--allow-member-host-commands`: owners and developers of a project may deploy host commands too. */
  allowMembers: boolean;
  /**
   * The runtime runs the user's image in a container (the Docker runtime): its command runs
   * there, not on this host, so nothing here is a host command and no role rule applies.
   */
  containers?: boolean;
}

/** The embedded default is the strictest: admins only, and only inside a sandbox. */
export const STRICT_HOST_COMMANDS: HostCommandPolicy = { sandboxed: false, allowUnsandboxed: false, allowMembers: false };

/** True when the runtime would run this spec's command on the host (not the reference engine). */
export function runsHostCommand(spec: DeploymentSpec, images: ImageMap): boolean {
  return spec.family === 'general' && resolveImage(images, spec.image, spec.tag).kind === 'host';
}

/** Answered 403 `forbidden` by the control API: the server, as configured, does not allow it. */
export interface HostCommandRefusal {
  /** no_sandbox: nobody may on this node as configured; role: the caller's role may not. */
  reason: 'no_sandbox' | 'role';
  message: string;
}

/**
 * Why a caller may not deploy a host command here, or null when it may. `role`: `admin` for the
 * platform admin, else the caller's role in the deployment's project (`member`: an account
 * from before projects, a developer), null for none.
 */
export function hostCommandRefusal(policy: HostCommandPolicy, role: 'admin' | ProjectRole | 'member' | null): HostCommandRefusal | null {
  if (policy.containers === true) return null;
  if (!policy.sandboxed && !policy.allowUnsandboxed) {
    return {
      reason: 'no_sandbox',
      message:
        'this node has no replica sandbox (bubblewrap), so images the runtime does not simulate cannot run their command here; ' +
        'install bubblewrap (apt-get install bubblewrap) and restart, or start the service with --allow-unsandboxed-host-commands ' +
        "to run them as the service's own user",
    };
  }
  const opened = policy.allowMembers && (role === 'owner' || role === 'developer' || role === 'member');
  if (role !== 'admin' && !opened) {
    return {
      reason: 'role',
      message:
        'only the platform admin may deploy an image the runtime does not simulate (its command runs on the host); ' +
        'use a preset or infergate/reference-engine image, ask an admin, or start the service with --allow-member-host-commands',
    };
  }
  return null;
}
