// Owns the map from container images to what the local runtime runs for them (docs/runtime.md):
// the reference engine in a flavor for the images it knows (`infergate/reference-engine`,
// whose tag names the flavor, and the presets' engines), and for any other image the
// deployment's command as a host process. `--image-map FILE` extends it. Pure: no I/O.

import { PRESETS } from './presets.js';

export const ENGINE_FLAVORS = ['openai', 'ollama', 'nim', 'v2'] as const;
export type EngineFlavor = (typeof ENGINE_FLAVORS)[number];

export const REFERENCE_ENGINE_IMAGE = 'infergate/reference-engine';
/** The orchestrated family's platform-supplied Frontend (`infergate frontend`). */
export const FRONTEND_IMAGE = 'infergate/frontend';

export interface ImageRule {
  /** An image name, or a prefix ending in `/` that covers a whole registry path. */
  image: string;
  flavor: EngineFlavor;
}

export type ImageMap = readonly ImageRule[];

const PRESET_FLAVOR: Record<string, EngineFlavor> = {
  vllm: 'openai',
  sglang: 'openai',
  tgi: 'openai',
  triton: 'v2',
  ollama: 'ollama',
  nim: 'nim',
};

/** The embedded map: every preset's image, plus the vendor registry's whole model path. */
export const DEFAULT_IMAGE_MAP: ImageMap = Object.freeze([
  ...PRESETS.map((p) => ({ image: p.image, flavor: PRESET_FLAVOR[p.id] ?? 'openai' })),
  { image: 'nvcr.io/nim/', flavor: 'nim' },
]);

export type Launch =
  | { kind: 'engine'; flavor: EngineFlavor; /** The image is the reference engine itself: the command is its own flags. */ native: boolean }
  | { kind: 'frontend' }
  | { kind: 'host' };

export function isFlavor(s: string): s is EngineFlavor {
  return (ENGINE_FLAVORS as readonly string[]).includes(s);
}

/**
 * What the local runtime runs for image:tag. The reference engine's tag names its flavor
 * (`latest` means openai); a known image runs the engine in its rule's flavor; anything else
 * runs the command on the host.
 */
export function resolveImage(map: ImageMap, image: string, tag: string): Launch {
  if (image === FRONTEND_IMAGE) return { kind: 'frontend' };
  if (image === REFERENCE_ENGINE_IMAGE) {
    return { kind: 'engine', flavor: isFlavor(tag) ? tag : 'openai', native: true };
  }
  const rule = map.find((r) => (r.image.endsWith('/') ? image.startsWith(r.image) : r.image === image));
  return rule ? { kind: 'engine', flavor: rule.flavor, native: false } : { kind: 'host' };
}

/** Reads `--image-map FILE` JSON: `[{"image": "...", "flavor": "openai"}]`, laid before the defaults. */
export function parseImageMap(json: unknown): ImageMap {
  if (!Array.isArray(json)) throw new Error('invalid image map: expected a JSON array of {"image", "flavor"}');
  const rules = json.map((entry: unknown, i): ImageRule => {
    const e = entry as { image?: unknown; flavor?: unknown } | null;
    if (typeof e?.image !== 'string' || e.image === '') throw new Error(`invalid image map: [${i}].image must be a non-empty string`);
    if (typeof e.flavor !== 'string' || !isFlavor(e.flavor)) {
      throw new Error(`invalid image map: [${i}].flavor must be one of ${ENGINE_FLAVORS.join(', ')}`);
    }
    return { image: e.image, flavor: e.flavor };
  });
  return Object.freeze([...rules, ...DEFAULT_IMAGE_MAP]);
}
