// Ollama naming (":latest" by default), deterministic pull layers and the timestamp format.
import { describe, expect, it } from 'vitest';
import { OllamaModels, normalizeOllamaName, pullLayers, rfc3339Nano } from './ollama-api.js';

describe('ollama names', () => {
  it('adds the latest tag when none is given', () => {
    expect(normalizeOllamaName('llama3.2')).toBe('llama3.2:latest');
    expect(normalizeOllamaName('llama3.2:latest')).toBe('llama3.2:latest');
    expect(normalizeOllamaName('llama3.2:1b')).toBe('llama3.2:1b');
    expect(normalizeOllamaName('registry.example:5000/ns/model')).toBe('registry.example:5000/ns/model:latest');
    expect(normalizeOllamaName('ns/model:q4')).toBe('ns/model:q4');
    for (const bad of ['', '..', 'a b', 'model:', '/x']) expect(normalizeOllamaName(bad)).toBeNull();
  });

  it('resolves pulled models for the /v1 routes, with and without the tag', () => {
    const models = new OllamaModels();
    expect(models.resolve('llama3.2')).toMatchObject({ ok: false, status: 404, message: 'model "llama3.2" not found, try pulling it first' });
    models.add('llama3.2:latest');
    expect(models.resolve('llama3.2')).toEqual({ ok: true, model: 'llama3.2', label: 'llama3.2:latest' });
    expect(models.resolve('llama3.2:latest')).toMatchObject({ ok: true });
    expect(models.cards().map((c) => c.id)).toEqual(['llama3.2:latest']);
  });
});

describe('pull layers', () => {
  it('are deterministic sha256 digests with a large weights layer first', () => {
    const layers = pullLayers('llama3.2:latest');
    expect(layers).toEqual(pullLayers('llama3.2:latest'));
    expect(layers[0]!.total).toBeGreaterThan(1e9);
    for (const l of layers) expect(l.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(pullLayers('other:latest')[0]!.digest).not.toBe(layers[0]!.digest);
  });
});

describe('rfc3339Nano', () => {
  it('formats with nine fractional digits', () => {
    expect(rfc3339Nano(new Date('2026-01-02T03:04:05.678Z'))).toMatch(/^2026-01-02T03:04:05\.678\d{6}Z$/);
  });
});
