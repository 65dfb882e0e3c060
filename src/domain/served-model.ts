// Owns the model name a deployment's clients send in a request's `model` field, read from its
// spec alone: an orchestrated deployment's served_model_name, else its model-hub id; for a
// general deployment, what its engine serves by its command (vLLM's `--served-model-name`,
// else the model its flags or `serve <model>` name), the model a vendor image's path names,
// or the reference engine's default. The local runtime turns an engine command into
// reference-engine flags with the same reading (runtime/engine-args.ts), so what the API
// announces is what the simulated engine answers to. Null where the spec cannot say: Ollama
// serves whatever is pulled, and a custom image with no recognisable flag names its own. Pure.

import { DEFAULT_IMAGE_MAP, REFERENCE_ENGINE_IMAGE, resolveImage, type ImageMap } from './image-map.js';
import type { DeploymentSpec } from './records.js';

/** The flag that names what clients send (vLLM); it wins over the model's own name. */
export const SERVED_NAME_FLAG = '--served-model-name';
/** Flags that name the model to load in vLLM, SGLang, TGI and the reference engine, in order of precedence. */
export const MODEL_ID_FLAGS = ['--model', '--model-path', '--model-id'] as const;
/** What the reference engine serves without `--model` (its flag table's default). */
export const REFERENCE_ENGINE_DEFAULT_MODEL = 'sim/model';

export interface CommandModel {
  /** The model to load: a model flag, else the word after `serve`, else the first org/model-looking word. */
  model: string | null;
  /** The alias clients send (`--served-model-name`); null when the command gives none. */
  served: string | null;
}

/** The value of a flag given as `--flag value` or `--flag=value`; the last one given wins, as in argparse. */
function flagValues(command: readonly string[]): Map<string, string> {
  const values = new Map<string, string>();
  for (let i = 0; i < command.length; i++) {
    const token = command[i] as string;
    if (!token.startsWith('--')) continue;
    const eq = token.indexOf('=');
    if (eq !== -1) {
      values.set(token.slice(0, eq), token.slice(eq + 1));
      continue;
    }
    const next = command[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      values.set(token, next);
      i++;
    }
  }
  return values;
}

/** The positional model: the word after `serve` (`vllm serve org/model`), or the first org/model-looking word (not a path such as ./run.sh). */
function positionalModel(command: readonly string[]): string | null {
  let afterServe = false;
  let found: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const token = command[i] as string;
    if (token.startsWith('--')) {
      // A flag's value is not a positional.
      if (!token.includes('=') && command[i + 1] !== undefined && !(command[i + 1] as string).startsWith('--')) i++;
      afterServe = false;
      continue;
    }
    if (afterServe || (found === null && /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(token))) found ??= token;
    afterServe = token === 'serve';
  }
  return found;
}

/** What an engine command names: the model to load and the alias clients send. */
export function commandModel(command: readonly string[]): CommandModel {
  const values = flagValues(command);
  const flagged = MODEL_ID_FLAGS.map((f) => values.get(f)).find((v) => v !== undefined && v !== '');
  const served = values.get(SERVED_NAME_FLAG);
  return { model: flagged ?? positionalModel(command), served: served !== undefined && served !== '' ? served : null };
}

/** `nvcr.io/nim/meta/llama-3.1-8b-instruct` → `meta/llama-3.1-8b-instruct`: the vendor image names its model. */
export function modelFromVendorImage(image: string): string {
  const parts = image.split('/');
  return parts.length >= 2 ? parts.slice(-2).join('/') : image;
}

type ServedSpec =
  | Pick<Extract<DeploymentSpec, { family: 'general' }>, 'family' | 'image' | 'tag' | 'command'>
  | Pick<Extract<DeploymentSpec, { family: 'orchestrated' }>, 'family' | 'model' | 'served_model_name'>;

/**
 * The name clients send as `model`, or null when the spec cannot tell (Ollama; an image the
 * platform does not know whose command names no model). `images` is the runtime's image map;
 * the embedded one by default.
 */
export function servedModel(spec: ServedSpec, images: ImageMap = DEFAULT_IMAGE_MAP): string | null {
  if (spec.family === 'orchestrated') return spec.served_model_name ?? spec.model;
  const launch = resolveImage(images, spec.image, spec.tag);
  if (launch.kind === 'engine' && launch.flavor === 'ollama') return null;
  const named = commandModel(spec.command);
  if (named.served !== null) return named.served;
  // The reference engine image takes its own flags: only --model names its model.
  if (spec.image === REFERENCE_ENGINE_IMAGE) return flagValues(spec.command).get('--model') || REFERENCE_ENGINE_DEFAULT_MODEL;
  if (named.model !== null) return named.model;
  if (launch.kind === 'engine' && launch.flavor === 'nim') return modelFromVendorImage(spec.image);
  return null;
}
