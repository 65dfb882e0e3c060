// Owns which environment variables are secret whatever the request says: names whose value is a
// credential by convention of the engines the platform runs, so they are sealed at rest and never
// returned even when a client follows a recipe that puts them in plain `env` (docs/control-api.md,
// "Secret environment variables"). Pure and without imports, so the console's bundle and the
// command-line client take it as it is.

/**
 * Always stored as secret environment variables: given in `env`, they are moved to the sealed set.
 * REGISTRY_API_KEY: the vendor-packaged model container's registry key (preset `nim`).
 */
export const ALWAYS_SECRET_ENV: readonly string[] = Object.freeze(['REGISTRY_API_KEY']);

export function isAlwaysSecret(name: string): boolean {
  return ALWAYS_SECRET_ENV.includes(name);
}
