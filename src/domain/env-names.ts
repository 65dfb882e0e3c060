// Owns which environment variable names a deployment may not set, and why — one rule for the
// control API (refused with the reason) and the runtime (dropped from a record written before
// the rule, with a line in the replica's log). Pure: no I/O.
//
// Two kinds:
// - Names the runtime sets itself (`INFERGATE_*`: the replica's id, root, config file and
//   model cache): a deployment setting them would mislead the engine about its own files.
// - Names that make the dynamic loader, Node.js or OpenSSL load code from elsewhere. Where the
//   runtime simulates the image, the process is infergate's own program (the reference engine,
//   the Frontend), and such a variable could only serve to run the deployment's own code inside
//   it — which is exactly what the host-command rule keeps to admins. Where the deployment runs
//   its own command (a host command, later a container), they act only on that command, inside
//   its sandbox, with the replica's own privileges: harmless there, so allowed.

/** Prefix of the variables the runtime sets in every replica. */
export const RUNTIME_ENV_PREFIX = 'INFERGATE_';

/** Prefixes and names that load code: glibc's dynamic loader and iconv, Node.js, OpenSSL. */
const CODE_LOADING_PREFIXES = ['LD_'];
const CODE_LOADING_NAMES = new Set([
  'GCONV_PATH',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_REPL_EXTERNAL_MODULE',
  'NODE_COMPILE_CACHE',
  'OPENSSL_CONF',
  'OPENSSL_MODULES',
  'OPENSSL_ENGINES',
]);

/** The names, as the docs and messages list them. */
export const CODE_LOADING_ENV = ['LD_*', ...CODE_LOADING_NAMES];

export function loadsCode(name: string): boolean {
  return CODE_LOADING_PREFIXES.some((p) => name.startsWith(p)) || CODE_LOADING_NAMES.has(name);
}

export function isRuntimeVariable(name: string): boolean {
  return name.startsWith(RUNTIME_ENV_PREFIX);
}

/**
 * Why a deployment may not set `name`, or null. `simulated`: the image runs infergate's own
 * program (every orchestrated deployment; a general one whose image the runtime simulates).
 */
export function envNameRefusal(name: string, simulated: boolean): string | null {
  if (isRuntimeVariable(name)) {
    return `${name}: variables starting with ${RUNTIME_ENV_PREFIX} are set by the runtime in every replica (its id, root, config file and model cache); choose another name`;
  }
  if (simulated && loadsCode(name)) {
    const loader = name.startsWith('NODE_') ? 'Node.js' : name.startsWith('OPENSSL_') ? 'OpenSSL' : 'the dynamic loader';
    return (
      `${name} makes ${loader} load code, and this image runs infergate's own simulated engine, ` +
      "where code loaded this way would run inside the platform's program; remove it (it is allowed only for an image that runs its own command, " +
      'where it acts inside that replica alone)'
    );
  }
  return null;
}
