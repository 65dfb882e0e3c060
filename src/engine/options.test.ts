// Engine flag parsing: defaults, env fallbacks, and one-line errors that name the flag.
import { describe, expect, it } from 'vitest';
import { EngineOptionsError, engineHelp, parseEngineOptions } from './options.js';

describe('parseEngineOptions', () => {
  it('has the documented defaults', () => {
    const o = parseEngineOptions([], {}, 42);
    expect(o).toMatchObject({
      flavor: 'openai',
      host: '0.0.0.0',
      port: 8000,
      model: 'sim/model',
      servedModel: 'sim/model',
      startupMs: 2000,
      warmLoadRatio: 0.1,
      ttftMs: 50,
      itlMs: 10,
      itlGrowth: 0.05,
      maxRunning: 8,
      maxTokensDefault: 16,
      replicaId: 'sim-42',
      cacheDir: null,
      metrics: true,
      metricsPort: null,
      pullMs: 1500,
      shutdownGraceMs: 5000,
    });
  });

  it('takes PORT, INFERGATE_REPLICA_ID and INFERGATE_MODEL_CACHE_DIR from the environment, flags first', () => {
    const env = { PORT: '9001', INFERGATE_REPLICA_ID: 'rep-7', INFERGATE_MODEL_CACHE_DIR: '/cache' };
    expect(parseEngineOptions([], env)).toMatchObject({ port: 9001, replicaId: 'rep-7', cacheDir: '/cache' });
    expect(parseEngineOptions(['--port', '9002', '--replica-id', 'r', '--cache-dir', '/c'], env)).toMatchObject({
      port: 9002,
      replicaId: 'r',
      cacheDir: '/c',
    });
  });

  it('--served-model-name is the name answers give; the model stays what is loaded', () => {
    expect(parseEngineOptions(['--model', 'org/m', '--served-model-name', 'chat model'], {})).toMatchObject({ model: 'org/m', servedModel: 'chat model' });
    expect(() => parseEngineOptions(['--served-model-name', 'a\nb'], {})).toThrow(/--served-model-name must be at most 256 characters, without control characters/);
  });

  it('accepts the v2 flavor, its port taken from PORT like the others', () => {
    expect(parseEngineOptions(['--flavor', 'v2', '--metrics-port', '9100'], { PORT: '9001' })).toMatchObject({ flavor: 'v2', port: 9001, metricsPort: 9100 });
  });

  it('parses every knob', () => {
    const o = parseEngineOptions(
      ['--flavor', 'ollama', '--itl-growth', '0.5', '--warm-load-ratio', '.25', '--max-running', '2', '--metrics-port', '9100', '--ttft-ms', '1.5'],
      {},
    );
    expect(o).toMatchObject({ flavor: 'ollama', itlGrowth: 0.5, warmLoadRatio: 0.25, maxRunning: 2, metricsPort: 9100, ttftMs: 1.5 });
  });

  it('--metrics false turns the exporter off; anything but true or false is refused', () => {
    expect(parseEngineOptions(['--metrics', 'false', '--metrics-port', '9100'], {})).toMatchObject({ metrics: false, metricsPort: 9100 });
    expect(() => parseEngineOptions(['--metrics', 'no'], {})).toThrow(/--metrics must be true or false, not "no"/);
    expect(engineHelp()).toMatch(/^\s+--metrics\s.*GET \/metrics answers 404/m);
  });

  it.each([
    [['--flavor', 'tgi'], /--flavor must be openai, ollama, nim or v2/],
    [['--port', 'abc'], /--port must be a whole number/],
    [['--port', '70000'], /--port must be between 0 and 65535/],
    [['--max-running', '0'], /--max-running must be between 1/],
    [['--warm-load-ratio', '2'], /--warm-load-ratio must be between 0 and 1/],
    [['--itl-ms', 'fast'], /--itl-ms must be a non-negative number/],
    [['--model', '../etc'], /--model must start with a letter or digit/],
    [['--nope'], /Unknown option '--nope'/],
    [['extra'], /positional/i],
    [['--itl-growth', '-1'], /--itl-growth/],
  ])('rejects %j in one line', (args, message) => {
    let error: unknown;
    try {
      parseEngineOptions(args, {});
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(EngineOptionsError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
  });

  it('parses the KV transfer connector flags and refuses a bad role', () => {
    expect(parseEngineOptions([], {}).kv).toEqual({ role: 'none', port: 0, host: '127.0.0.1', bytesPerToken: 2048, blockTokens: 16 });
    const o = parseEngineOptions(['--kv-role', 'prefill', '--kv-port', '7001', '--kv-host', '10.0.0.5', '--kv-bytes-per-token', '512', '--kv-block-tokens', '32'], {});
    expect(o.kv).toEqual({ role: 'prefill', port: 7001, host: '10.0.0.5', bytesPerToken: 512, blockTokens: 32 });
    expect(() => parseEngineOptions(['--kv-role', 'both'], {})).toThrow(/--kv-role must be none, prefill or decode/);
    expect(() => parseEngineOptions(['--kv-role', 'decode', '--flavor', 'ollama'], {})).toThrow(/--kv-role decode needs --flavor openai/);
  });

  it('documents every flag in --help', () => {
    const help = engineHelp();
    for (const flag of ['--flavor', '--startup-ms', '--itl-growth', '--max-running', '--cache-dir', '--pull-ms', 'INFERGATE_REPLICA_ID', 'SIMULATED']) {
      expect(help).toContain(flag);
    }
  });
});
