import { describe, expect, it } from 'vitest';
import { commandModel, servedModel } from './served-model.js';
import { parseImageMap } from './image-map.js';

const general = (image: string, command: string[], tag = 'latest') => ({ family: 'general' as const, image, tag, command });

describe('commandModel', () => {
  it.each([
    ['vllm serve with an alias', ['vllm', 'serve', 'org/m', '--served-model-name', 'chat'], { model: 'org/m', served: 'chat' }],
    ['vllm serve, = form', ['vllm', 'serve', 'org/m', '--served-model-name=chat'], { model: 'org/m', served: 'chat' }],
    ['vllm --model', ['python3', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'org/a'], { model: 'org/a', served: null }],
    ['SGLang --model-path', ['python3', '-m', 'sglang.launch_server', '--model-path', 'org/b', '--port', '30000'], { model: 'org/b', served: null }],
    ['TGI --model-id', ['text-generation-launcher', '--model-id=org/c'], { model: 'org/c', served: null }],
    ['a flag beats the positional', ['vllm', 'serve', 'org/x', '--model', 'org/y'], { model: 'org/y', served: null }],
    ['a flag value is not a positional model', ['tritonserver', '--model-repository', '/models/a'], { model: null, served: null }],
    ['the last alias given wins', ['vllm', 'serve', 'org/m', '--served-model-name', 'a', '--served-model-name', 'b'], { model: 'org/m', served: 'b' }],
    ['an empty alias is none', ['vllm', 'serve', 'org/m', '--served-model-name='], { model: 'org/m', served: null }],
    ['nothing named', ['--startup-ms', '100'], { model: null, served: null }],
  ])('%s', (_what, command, expected) => {
    expect(commandModel(command)).toEqual(expected);
  });
});

describe('servedModel', () => {
  it.each([
    ['orchestrated with an alias', { family: 'orchestrated' as const, model: 'org/m', served_model_name: 'chat' }, 'chat'],
    ['orchestrated without one: the model-hub id', { family: 'orchestrated' as const, model: 'org/m', served_model_name: null }, 'org/m'],
    ['reference engine, no --model: its default', general('infergate/reference-engine', ['--startup-ms', '300'], 'openai'), 'sim/model'],
    ['reference engine --model', general('infergate/reference-engine', ['--model', 'org/own'], 'openai'), 'org/own'],
    ['reference engine --model=', general('infergate/reference-engine', ['--model=org/own'], 'v2'), 'org/own'],
    ['reference engine --served-model-name', general('infergate/reference-engine', ['--model', 'org/own', '--served-model-name', 'alias'], 'openai'), 'alias'],
    ['reference engine, ollama flavor: whatever is pulled', general('infergate/reference-engine', [], 'ollama'), null],
    ['vLLM preset with an alias', general('vllm/vllm-openai', ['vllm', 'serve', 'org/m', '--served-model-name', 'chat']), 'chat'],
    ['vLLM preset without one', general('vllm/vllm-openai', ['vllm', 'serve', 'org/m', '--port', '8000']), 'org/m'],
    ['SGLang preset', general('lmsysorg/sglang', ['python3', '-m', 'sglang.launch_server', '--model-path', 'org/s']), 'org/s'],
    ['TGI preset', general('ghcr.io/huggingface/text-generation-inference', ['text-generation-launcher', '--model-id', 'org/t']), 'org/t'],
    ['Ollama preset', general('ollama/ollama', []), null],
    ['vendor image: its path names the model', general('nvcr.io/nim/meta/llama-3.1-8b-instruct', []), 'meta/llama-3.1-8b-instruct'],
    ['Triton: a model repository, no name', general('nvcr.io/nvidia/tritonserver', ['tritonserver', '--model-repository=/models']), null],
    ['a custom image serving with vLLM flags', general('registry.example/team/llm', ['vllm', 'serve', 'org/c']), 'org/c'],
    ['a custom image with its own command', general('registry.example/team/app', ['./run.sh']), null],
  ])('%s', (_what, spec, expected) => {
    expect(servedModel(spec)).toBe(expected);
  });

  it("an operator's image map that names an image ollama makes its model unknown", () => {
    const images = parseImageMap([{ image: 'registry.example/team/ollama', flavor: 'ollama' }]);
    expect(servedModel(general('registry.example/team/ollama', ['serve', 'org/m']), images)).toBeNull();
    expect(servedModel(general('registry.example/team/ollama', ['serve', 'org/m']))).toBe('org/m');
  });
});
