import { describe, expect, it } from 'vitest';
import { modelFromVendorImage, translateEngineCommand } from './engine-args.js';

describe('translateEngineCommand', () => {
  it('vLLM: the positional model is loaded and served as --served-model-name; port and host are the runtime\'s', () => {
    const t = translateEngineCommand(['vllm', 'serve', 'org/m', '--served-model-name', 'chat', '--port', '8000', '--host', '0.0.0.0', '--tensor-parallel-size', '2']);
    expect(t).toEqual({ args: ['--served-model-name', 'chat'], ignored: ['--tensor-parallel-size 2'], model: 'org/m' });
  });

  it('SGLang and TGI name the model with a flag, = or space separated', () => {
    expect(translateEngineCommand(['python3', '-m', 'sglang.launch_server', '--model-path=org/a']).model).toBe('org/a');
    expect(translateEngineCommand(['text-generation-launcher', '--model-id', 'org/b']).model).toBe('org/b');
  });

  it('engine knobs pass through; a bare flag is reported as not simulated', () => {
    const t = translateEngineCommand(['--startup-ms', '100', '--itl-ms=5', '--enforce-eager']);
    expect(t.args).toEqual(['--startup-ms', '100', '--itl-ms', '5']);
    expect(t.ignored).toEqual(['--enforce-eager']);
  });

  it('the vendor image path names its model', () => {
    expect(modelFromVendorImage('nvcr.io/nim/meta/llama-3.1-8b-instruct')).toBe('meta/llama-3.1-8b-instruct');
  });
});
