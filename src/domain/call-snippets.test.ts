// The snippets' text for each protection and protocol, and their quoting: a model name with
// quotes, `$(…)` and a newline reaches curl, Python and JavaScript as the same string and runs
// nothing (bash and python3 read the snippets back).

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { callSnippets, snippetDeployment, type SnippetDeployment } from './call-snippets.js';

const chat: SnippetDeployment = {
  name: 'chat',
  protocol: 'http',
  endpoint_url: 'chat.endpoints.localhost:8443',
  endpoint_path_url: 'https://localhost:8443/endpoints/chat',
  served_model: 'sim/model',
  endpoint_token_id: 4,
  client_certificate_id: null,
};
const byKind = (d: SnippetDeployment, token?: string) => Object.fromEntries(callSnippets(d, { token }).map((s) => [s.kind, s.text]));

describe('callSnippets', () => {
  it('HTTP with a bearer token: curl, Python and JavaScript on the path address, the CA, the model, ENDPOINT_TOKEN', () => {
    const s = byKind(chat);
    expect(Object.keys(s)).toEqual(['curl', 'python', 'javascript']);
    expect(s.curl).toContain('curl --cacert ca.crt https://localhost:8443/endpoints/chat/v1/chat/completions');
    expect(s.curl).toContain('-H "Authorization: Bearer $ENDPOINT_TOKEN"');
    expect(s.curl).toContain(`-d '{"model": "sim/model", "messages": [{"role": "user", "content": "Hello"}]}'`);
    expect(s.curl).toContain('# ENDPOINT_TOKEN: the endpoint\'s bearer token, export ENDPOINT_TOKEN=<token>');
    expect(s.python).toContain('base_url="https://localhost:8443/endpoints/chat/v1"');
    expect(s.python).toContain('api_key=os.environ["ENDPOINT_TOKEN"]');
    expect(s.python).toContain('ssl.create_default_context(cafile="ca.crt")');
    expect(s.python).toContain('model="sim/model"');
    expect(s.python).not.toContain('load_cert_chain');
    expect(s.javascript).toContain('baseURL: "https://localhost:8443/endpoints/chat/v1"');
    expect(s.javascript).toContain('apiKey: process.env.ENDPOINT_TOKEN');
    // No client certificate: the SDK as it comes, Node trusting the CA through the environment.
    expect(s.javascript?.split('\n')[0]).toBe('// npm install openai; run as an ES module, trusting the platform CA: NODE_EXTRA_CA_CERTS=ca.crt node chat.mjs');
    expect(s.javascript).not.toContain('undici');
    expect(s.javascript).toContain('model: "sim/model"');
    for (const text of Object.values(s)) expect(text).not.toMatch(/MODEL"|ENDPOINT_TOKEN\)|\$TOKEN/);
  });

  it('the token just shown is filled in, and nothing then reads ENDPOINT_TOKEN', () => {
    const s = byKind(chat, 'tok-abc');
    expect(s.curl).toContain("-H 'Authorization: Bearer tok-abc'");
    expect(s.python).toContain('api_key="tok-abc"');
    expect(s.python).not.toContain('import os');
    expect(s.javascript).toContain('apiKey: "tok-abc"');
    for (const text of Object.values(s)) expect(text).not.toContain('ENDPOINT_TOKEN');
  });

  it('a private endpoint presents its client certificate and key; without a token the SDKs send a placeholder key', () => {
    const s = byKind({ ...chat, endpoint_token_id: null, client_certificate_id: 7 });
    expect(s.curl).toContain('--cacert ca.crt --cert chat-client.pem');
    expect(s.curl).not.toContain('Authorization');
    expect(s.curl).toContain('# chat-client.pem: the client certificate and its key (GET /certificates/7/pem)');
    expect(s.python).toContain('tls.load_cert_chain("chat-client.pem")');
    expect(s.python).toContain('api_key="unused"');
    expect(s.javascript).toContain('const pem = readFileSync("chat-client.pem");');
    expect(s.javascript).toContain('connect: { ca: readFileSync("ca.crt"), cert: pem, key: pem }');
    const both = byKind({ ...chat, client_certificate_id: 7 });
    expect(both.curl).toContain('--cert chat-client.pem');
    expect(both.curl).toContain('Bearer $ENDPOINT_TOKEN');
  });

  it('without a known model: curl lists the models, the SDKs take the first one listed', () => {
    const s = byKind({ ...chat, served_model: null });
    expect(s.curl).toContain('https://localhost:8443/endpoints/chat/v1/models');
    expect(s.curl).not.toContain('-d ');
    expect(s.python).toContain('model = client.models.list().data[0].id');
    expect(s.python).toContain('    model=model,');
    expect(s.javascript).toContain('const model = (await client.models.list()).data[0].id;');
  });

  it('without a path address the host address serves', () => {
    expect(byKind({ ...chat, endpoint_path_url: null }).curl).toContain('https://chat.endpoints.localhost:8443/v1/chat/completions');
  });

  it('gRPC: grpcurl on the host address with the CA, the proto and ModelReady for the served model', () => {
    const [only, ...rest] = callSnippets({ ...chat, protocol: 'grpc', endpoint_path_url: null, client_certificate_id: 2 });
    expect(rest).toEqual([]);
    expect(only?.kind).toBe('grpcurl');
    expect(only?.text).toContain('grpcurl -cacert ca.crt -cert chat-client.pem -key chat-client.pem -import-path proto -proto inference.proto');
    expect(only?.text).toContain(`-d '{"name": "sim/model"}'`);
    expect(only?.text).toContain('chat.endpoints.localhost:8443 inference.GRPCInferenceService/ModelReady');
    const on443 = callSnippets({ ...chat, protocol: 'grpc', endpoint_url: 'chat.example.com', served_model: null })[0]?.text;
    expect(on443).toContain('chat.example.com:443 inference.GRPCInferenceService/ServerReady');
  });

  it('reads a loose view field by field', () => {
    expect(snippetDeployment({ name: 'x', endpoint_url: 'x.d', served_model: 3, endpoint_token_id: 'no', client_certificate_id: 9 })).toEqual({
      name: 'x',
      protocol: 'http',
      endpoint_url: 'x.d',
      endpoint_path_url: null,
      served_model: null,
      endpoint_token_id: null,
      client_certificate_id: 9,
    });
  });
});

describe('quoting', () => {
  const marker = path.join(os.tmpdir(), `infergate-snippet-ran-${process.pid}`);
  const hostile = `it's "m" $(touch ${marker}) \`touch ${marker}\` \\ \n next`;
  const d = { ...chat, served_model: hostile };

  it('curl: bash passes the exact JSON to curl and runs nothing else', () => {
    const curl = callSnippets(d, { token: `t'ok $(id)` })[0]!.text;
    // A curl that prints its arguments, each ended by a NUL.
    const out = execFileSync('bash', ['-c', `curl() { printf '%s\\0' "$@"; }\n${curl}`], { encoding: 'utf8' });
    const args = out.split('\0');
    expect(existsSync(marker)).toBe(false);
    const body = JSON.parse(args[args.indexOf('-d') + 1]!) as { model: string };
    expect(body.model).toBe(hostile);
    expect(args).toContain(`Authorization: Bearer t'ok $(id)`);
  });

  it('Python: the literal is the same string', () => {
    const python = callSnippets(d)[1]!.text;
    const line = python.split('\n').find((l) => l.trimStart().startsWith('model='))!;
    const value = execFileSync('python3', ['-c', 'import ast,sys; print(ast.literal_eval(sys.argv[1]), end="")', line.trim().replace(/^model=/, '').replace(/,$/, '')], { encoding: 'utf8' });
    expect(value).toBe(hostile);
    execFileSync('python3', ['-c', 'import ast,sys; ast.parse(sys.argv[1])', python]);
  });

  it('JavaScript: the literal is the same string', () => {
    const js = callSnippets(d)[2]!.text;
    const line = js.split('\n').find((l) => l.trimStart().startsWith('model:'))!;
    expect(JSON.parse(line.trim().replace(/^model: /, '').replace(/,$/, ''))).toBe(hostile);
  });
});
