// Owns how a preset engine's command becomes reference-engine flags when the local runtime
// simulates that engine: the model named by the engine's own flags or its
// `serve <model>` positional becomes `--model`, the engine knobs the simulator has pass
// through, the port and host are the runtime's to choose, and everything else is named in
// the replica's log as not simulated — never silently dropped.

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

/** Flags that name the model in vLLM, SGLang, TGI and Triton, in order of precedence. */
const MODEL_FLAGS = ['--served-model-name', '--model', '--model-path', '--model-id'];
const RUNTIME_FLAGS = new Set(['--port', '--host', '--hostname']);

export interface TranslatedArgs {
  args: string[];
  /** Arguments the simulator does not model, for the replica's log. */
  ignored: string[];
  model: string | null;
}

export function translateEngineCommand(command: string[]): TranslatedArgs {
  const args: string[] = [];
  const ignored: string[] = [];
  const models = new Map<string, string>();
  let positionalModel: string | null = null;
  let afterServe = false;
  for (let i = 0; i < command.length; i++) {
    const token = command[i] as string;
    if (!token.startsWith('--')) {
      // `vllm serve org/model`: the positional after `serve`, or any org/model-looking word.
      if (afterServe || (positionalModel === null && /^[\w.-]+\/[\w.-]+$/.test(token))) positionalModel ??= token;
      afterServe = token === 'serve';
      if (positionalModel !== token && !['serve', 'vllm', 'python', 'python3', '-m'].includes(token)) ignored.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const flag = eq === -1 ? token : token.slice(0, eq);
    const next = command[i + 1];
    const hasValue = eq !== -1 || (next !== undefined && !next.startsWith('--'));
    const value = eq !== -1 ? token.slice(eq + 1) : hasValue ? (next as string) : null;
    if (eq === -1 && hasValue) i++;
    if (ENGINE_KNOBS.has(flag) && value !== null) args.push(flag, value);
    else if (MODEL_FLAGS.includes(flag) && value !== null) models.set(flag, value);
    else if (!RUNTIME_FLAGS.has(flag)) ignored.push(value === null ? flag : `${flag} ${value}`);
  }
  const model = MODEL_FLAGS.map((f) => models.get(f)).find((m) => m !== undefined) ?? positionalModel;
  return { args, ignored, model };
}

/** `nvcr.io/nim/meta/llama-3.1-8b-instruct` → `meta/llama-3.1-8b-instruct`: the vendor image names its model. */
export function modelFromVendorImage(image: string): string {
  const parts = image.split('/');
  return parts.length >= 2 ? parts.slice(-2).join('/') : image;
}
