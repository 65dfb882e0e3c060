// Owns the rule for `container_capabilities`: the capabilities a general deployment's
// containers may keep although the Docker runtime drops them by default — each lets code in
// the container make a file or a device that acts beyond it (a setuid program, a device node,
// file capabilities) or change its uid — which names are allowed, and who may ask for them.
// One rule for the control API (refused with these words), the console and the runtime.
// Pure: no I/O.

/** Dropped from every container unless its deployment keeps them; NET_RAW is dropped always. */
export const GRANTABLE_CAPABILITIES = ['SETUID', 'SETGID', 'MKNOD', 'FSETID', 'SETFCAP'] as const;
export type ContainerCapability = (typeof GRANTABLE_CAPABILITIES)[number];

/** The spec's list; a record written before the field existed keeps none. */
export function containerCapabilitiesOf(spec: { container_capabilities?: readonly ContainerCapability[] }): ContainerCapability[] {
  return [...(spec.container_capabilities ?? [])];
}

export function isGrantableCapability(name: string): name is ContainerCapability {
  return (GRANTABLE_CAPABILITIES as readonly string[]).includes(name);
}

/** Why `names` cannot be a deployment's container_capabilities, or undefined when they can. */
export function containerCapabilitiesProblem(names: readonly string[]): string | undefined {
  const unknown = names.find((n) => !isGrantableCapability(n));
  if (unknown !== undefined) {
    return `container_capabilities may name only ${GRANTABLE_CAPABILITIES.join(', ')} (the capabilities containers lose by default), not "${unknown.slice(0, 40)}"`;
  }
  const repeated = names.find((n, i) => names.indexOf(n) !== i);
  if (repeated !== undefined) return `container_capabilities names ${repeated} twice`;
  return undefined;
}

/** The list in the order GRANTABLE_CAPABILITIES gives, so an equal set is an equal spec. */
export function normalizeCapabilities(names: readonly ContainerCapability[]): ContainerCapability[] {
  return GRANTABLE_CAPABILITIES.filter((c) => names.includes(c));
}

/**
 * Answered 403 `forbidden`: a capability kept in a container lets code there act on the host
 * through what it writes (a setuid program in the model cache, a device node), so it is an
 * admin's choice, like a host command.
 */
export function containerCapabilitiesRefusal(isAdmin: boolean, names: readonly ContainerCapability[]): string | null {
  if (isAdmin || names.length === 0) return null;
  return `only an admin service account may keep capabilities in a deployment's containers (container_capabilities: ${names.join(', ')}); leave container_capabilities empty or ask an admin`;
}
