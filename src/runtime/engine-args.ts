// Owns how a preset engine's command becomes reference-engine flags when the local runtime
// simulates that engine: the model named by the engine's own flags or its `serve <model>`
// positional becomes `--model`, vLLM's `--served-model-name` stays the name the engine answers
// to (both read by domain/served-model.ts, which the API's `served_model` uses too), the engine
// knobs the simulator has pass through, the port and host are the runtime's to choose, and
// everything else is named in the replica's log as not simulated — never silently dropped.

import { commandModel, MODEL_ID_FLAGS, SERVED_NAME_FLAG } from '../domain/served-model.js';

export { modelFromVendorImage } from '../domain/served-model.js';

/** The reference engine's knobs that take a value (see src/engine/options.ts). */
const ENGINE_KNOBS = new Set([
  '--startup-ms',
  '--warm-load-ratio',
  '--ttft-ms',
  '--itl-ms',
  '--itl-growth',
  '--max-running',
  '--max-tokens-default',
  '--pull-ms',
  '--shutdown-grace-ms',
]);

/** Flags read by commandModel: the model to load and the name it is served as. */
const MODEL_FLAGS: readonly string[] = [SERVED_NAME_FLAG, ...MODEL_ID_FLAGS];
const RUNTIME_FLAGS = new Set(['--port', '--host', '--hostname']);

export interface TranslatedArgs {
  /** Engine flags: the knobs, and `--served-model-name` when the command gives one. */
  args: string[];
  /** Arguments the simulator does not model, for the replica's log. */
  ignored: string[];
  /** The model to load (`--model`); null: the command names none. */
  model: string | null;
}

export function translateEngineCommand(command: string[]): TranslatedArgs {
  const args: string[] = [];
  const ignored: string[] = [];
  const { model, served } = commandModel(command);
  for (let i = 0; i < command.length; i++) {
    const token = command[i] as string;
    if (!token.startsWith('--')) {
      if (token !== model && !['serve', 'vllm', 'python', 'python3', '-m'].includes(token)) ignored.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const flag = eq === -1 ? token : token.slice(0, eq);
    const next = command[i + 1];
    const hasValue = eq !== -1 || (next !== undefined && !next.startsWith('--'));
    const value = eq !== -1 ? token.slice(eq + 1) : hasValue ? (next as string) : null;
    if (eq === -1 && hasValue) i++;
    if (ENGINE_KNOBS.has(flag) && value !== null) args.push(flag, value);
    else if (MODEL_FLAGS.includes(flag) && value !== null) continue;
    else if (!RUNTIME_FLAGS.has(flag)) ignored.push(value === null ? flag : `${flag} ${value}`);
  }
  if (served !== null) args.push(SERVED_NAME_FLAG, served);
  return { args, ignored, model };
}
