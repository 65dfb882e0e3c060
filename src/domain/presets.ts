// Owns the preset recipes of general inference (GET /presets, `preset` in a create): which
// image, tag, container port, protocol, health path and registry username each engine's
// recipe fills. A preset never fills the command (spec: "selecting one fills all fields
// except the entrypoint command"); `example_command` is documentation for the user. Pure.

import type { Protocol } from './records.js';

export interface Preset {
  id: string;
  name: string;
  description: string;
  image: string;
  tag: string;
  container_port: number;
  protocol: Protocol;
  health_check_path: string;
  /** Set only where the registry needs a fixed user name (the vendor registry's literal). */
  registry_username: string | null;
  /** What a user typically puts in `command`; never applied by the preset. */
  example_command: string[];
  /** Whether the engine needs a command at all (Ollama and the vendor container do not). */
  needs_command: boolean;
  /**
   * Environment variables the engine reads a credential from, to be given as secret variables
   * (the console offers them as secret rows); never filled by the preset.
   */
  secret_env: string[];
}

export const PRESETS: readonly Preset[] = Object.freeze([
  {
    id: 'vllm',
    name: 'vLLM',
    description: 'vLLM OpenAI-compatible server: /v1/chat/completions, /v1/models, /health, /metrics',
    image: 'vllm/vllm-openai',
    tag: 'latest',
    container_port: 8000,
    protocol: 'http',
    health_check_path: '/health',
    registry_username: null,
    example_command: ['vllm', 'serve', '<org>/<model>', '--host', '0.0.0.0', '--port', '8000'],
    needs_command: true,
    secret_env: [],
  },
  {
    id: 'sglang',
    name: 'SGLang',
    description: 'SGLang runtime with its OpenAI-compatible API',
    image: 'lmsysorg/sglang',
    tag: 'latest',
    container_port: 30000,
    protocol: 'http',
    health_check_path: '/health',
    registry_username: null,
    example_command: ['python3', '-m', 'sglang.launch_server', '--model-path', '<org>/<model>', '--host', '0.0.0.0', '--port', '30000'],
    needs_command: true,
    secret_env: [],
  },
  {
    id: 'tgi',
    name: 'Text Generation Inference',
    description: "Hugging Face TGI with its OpenAI-compatible Messages API",
    image: 'ghcr.io/huggingface/text-generation-inference',
    tag: 'latest',
    container_port: 80,
    protocol: 'http',
    health_check_path: '/health',
    registry_username: null,
    example_command: ['text-generation-launcher', '--model-id', '<org>/<model>', '--hostname', '0.0.0.0', '--port', '80'],
    needs_command: true,
    secret_env: [],
  },
  {
    id: 'triton',
    name: 'Triton Inference Server',
    description: 'NVIDIA Triton over gRPC (v2 inference protocol); readiness by TCP connect',
    image: 'nvcr.io/nvidia/tritonserver',
    tag: 'latest',
    container_port: 8001,
    protocol: 'grpc',
    health_check_path: '/v2/health/ready',
    registry_username: null,
    example_command: ['tritonserver', '--model-repository=/models'],
    needs_command: true,
    secret_env: [],
  },
  {
    id: 'ollama',
    name: 'Ollama',
    description: 'Ollama: no command needed; pull a model with POST /api/pull after the endpoint is ready, then /api/chat',
    image: 'ollama/ollama',
    tag: 'latest',
    container_port: 11434,
    protocol: 'http',
    health_check_path: '/',
    registry_username: null,
    example_command: [],
    needs_command: false,
    secret_env: [],
  },
  {
    id: 'nim',
    name: 'Vendor-packaged model container',
    description:
      'downloads its model weights at start-up and serves an OpenAI-compatible API; set registry_password and the env var REGISTRY_API_KEY to your registry key (kept as a secret variable, never shown again), leave the command empty',
    image: 'nvcr.io/nim/meta/llama-3.1-8b-instruct',
    tag: 'latest',
    container_port: 8000,
    protocol: 'http',
    health_check_path: '/v1/health/ready',
    registry_username: '$oauthtoken',
    example_command: [],
    needs_command: false,
    secret_env: ['REGISTRY_API_KEY'],
  },
] satisfies Preset[]);

export function findPreset(id: string): Preset | undefined {
  return PRESETS.find((p) => p.id === id);
}

/** The request fields a preset fills; the caller lays the user's own fields over them. */
export function presetFields(preset: Preset): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    image: preset.image,
    tag: preset.tag,
    container_port: preset.container_port,
    protocol: preset.protocol,
    health_check_path: preset.health_check_path,
  };
  if (preset.registry_username !== null) fields.registry_username = preset.registry_username;
  return fields;
}
