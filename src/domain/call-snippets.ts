// Owns the "Call it" snippets of a deployment, the same text in the web console's Overview and
// in `infergate describe`: curl, the OpenAI Python SDK and the OpenAI JavaScript SDK for an HTTP
// deployment, grpcurl for a gRPC one. Each runs as copied once the files it names are beside it:
// it trusts the platform CA (`ca.crt`), presents the client certificate of a private endpoint,
// sends the model its clients must name (`served_model`), and carries the endpoint token when
// the caller has just shown it, else reads ENDPOINT_TOKEN from the environment. SDK snippets use
// the path address (`endpoint_path_url`): getaddrinfo resolves `localhost`, not
// `<name>.endpoints.localhost`. Every value from the deployment is quoted for the language it
// lands in, and none goes into a comment. Pure: the console bundles it.

/** The environment variable the snippets read the endpoint token from. */
export const TOKEN_VARIABLE = 'ENDPOINT_TOKEN';
/** The platform CA as the snippets name it: GET /ca.crt on the control API saves it under this name. */
export const CA_FILE = 'ca.crt';

/** What the snippets read of a deployment view. */
export interface SnippetDeployment {
  name: string;
  protocol?: string;
  /** `<name>.<domain>[:port]`, no scheme. */
  endpoint_url: string;
  /** `https://<path host>[:port]/endpoints/<name>`; null for gRPC (or from an older API). */
  endpoint_path_url?: string | null;
  /** What clients send as `model`; null or absent when the API cannot tell. */
  served_model?: string | null;
  endpoint_token_id: number | null;
  client_certificate_id: number | null;
}

/** Reads the snippet fields of a loosely typed deployment view (the CLI's), each checked. */
export function snippetDeployment(view: { name: string; endpoint_url: string; [field: string]: unknown }): SnippetDeployment {
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  const id = (v: unknown): number | null => (typeof v === 'number' ? v : null);
  return {
    name: view.name,
    protocol: text(view.protocol) ?? 'http',
    endpoint_url: view.endpoint_url,
    endpoint_path_url: text(view.endpoint_path_url),
    served_model: text(view.served_model),
    endpoint_token_id: id(view.endpoint_token_id),
    client_certificate_id: id(view.client_certificate_id),
  };
}

export interface SnippetOptions {
  /** The endpoint token's value while it is being shown; else the snippets read ENDPOINT_TOKEN. */
  token?: string | null;
  /** The control API's origin (`http://127.0.0.1:8080`): the snippets then fetch the CA from it. */
  apiUrl?: string | null;
}

/** The command that fetches the CA from the control API, when its origin is a plain URL. */
function caFetch(apiUrl: string | null | undefined): string | null {
  if (!apiUrl || !/^https?:\/\/[A-Za-z0-9.:[\]-]+\/?$/.test(apiUrl)) return null;
  return `curl -sSfo ${CA_FILE} ${apiUrl.replace(/\/$/, '')}/ca.crt`;
}

export type SnippetKind = 'curl' | 'python' | 'javascript' | 'grpcurl';

export interface Snippet {
  kind: SnippetKind;
  title: string;
  language: 'shell' | 'python' | 'javascript';
  text: string;
}

/** The file a private endpoint's client certificate and key are saved as (the console's .pem download name). */
export function clientPemFile(d: Pick<SnippetDeployment, 'name'>): string {
  return `${d.name}-client.pem`;
}

/** The base URL: the path address when there is one, else the host address. */
export function snippetBaseUrl(d: SnippetDeployment): string {
  return d.endpoint_path_url ?? `https://${d.endpoint_url}`;
}

/** A shell word: bare when it cannot be misread, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_/:.@%+=,-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/** A string literal for Python and JavaScript alike: JSON's escapes are valid in both. */
const literal = (value: string): string => JSON.stringify(value);

interface Plan {
  base: string;
  model: string | null;
  /** The token's value, when the caller has it. */
  token: string | null;
  bearer: boolean;
  pem: string | null;
  certificateId: number | null;
  /** How to get the CA file, when the API's origin is known. */
  caFetch: string | null;
}

function plan(d: SnippetDeployment, o: SnippetOptions): Plan {
  const bearer = d.endpoint_token_id !== null;
  return {
    base: snippetBaseUrl(d),
    model: d.served_model ?? null,
    token: bearer && o.token ? o.token : null,
    bearer,
    pem: d.client_certificate_id !== null ? clientPemFile(d) : null,
    certificateId: d.client_certificate_id,
    caFetch: caFetch(o.apiUrl),
  };
}

/** Comment lines naming what a snippet needs beside it; only fixed words and validated names. */
function needs(p: Plan, tokenHow: string): string[] {
  const lines = [`${CA_FILE}: the platform CA${p.caFetch !== null ? `: ${p.caFetch}` : ' (GET /ca.crt on the control API, or certs/ca.crt on its host)'}`];
  if (p.pem !== null) lines.push(`${p.pem}: the client certificate and its key (GET /certificates/${p.certificateId}/pem)`);
  if (p.bearer && p.token === null) lines.push(`${TOKEN_VARIABLE}: the endpoint's bearer token, ${tokenHow}`);
  return lines;
}

const CHAT_MESSAGES = '[{"role": "user", "content": "Hello"}]';

function curl(p: Plan): Snippet {
  const auth = p.token !== null ? [`-H ${shellWord(`Authorization: Bearer ${p.token}`)}`] : p.bearer ? [`-H "Authorization: Bearer $${TOKEN_VARIABLE}"`] : [];
  const tls = [`--cacert ${CA_FILE}`, ...(p.pem !== null ? [`--cert ${shellWord(p.pem)}`] : [])].join(' ');
  // Without a known model name, the one request that needs none says which the endpoint serves.
  const lines =
    p.model === null
      ? [`curl ${tls} ${shellWord(`${p.base}/v1/models`)}`, ...auth]
      : [
          `curl ${tls} ${shellWord(`${p.base}/v1/chat/completions`)}`,
          ...auth,
          '-H "Content-Type: application/json"',
          '-H "X-Session-Id: my-session"',
          `-d ${shellWord(`{"model": ${JSON.stringify(p.model)}, "messages": ${CHAT_MESSAGES}}`)}`,
        ];
  // The CA is fetched by the snippet's first command when the API's origin is known.
  const comments = needs({ ...p, caFetch: null }, `export ${TOKEN_VARIABLE}=<token>`)
    .slice(p.caFetch !== null ? 1 : 0)
    .map((l) => `# ${l}`);
  if (p.model === null) comments.push('# The model is not known from the deployment: /v1/models lists what it serves.');
  const commands = [...(p.caFetch !== null ? [p.caFetch] : []), lines.join(' \\\n  ')];
  return { kind: 'curl', title: 'curl', language: 'shell', text: [...comments, ...commands].join('\n') };
}

function python(p: Plan): Snippet {
  const apiKey = p.token !== null ? literal(p.token) : p.bearer ? `os.environ[${literal(TOKEN_VARIABLE)}]` : '"unused"';
  const lines = [
    '# pip install openai',
    ...needs(p, 'in the environment').map((l) => `# ${l}`),
    ...(p.bearer && p.token === null ? ['import os'] : []),
    'import ssl',
    '',
    'import httpx',
    'from openai import OpenAI',
    '',
    `tls = ssl.create_default_context(cafile=${literal(CA_FILE)})`,
    ...(p.pem !== null ? [`tls.load_cert_chain(${literal(p.pem)})`] : []),
    'client = OpenAI(',
    `    base_url=${literal(`${p.base}/v1`)},`,
    `    api_key=${apiKey},${p.bearer ? '' : '  # the client certificate authenticates; the SDK wants a key'}`,
    '    http_client=httpx.Client(verify=tls),',
    ')',
    ...(p.model === null ? ['model = client.models.list().data[0].id  # the model is not known from the deployment'] : []),
    'stream = client.chat.completions.create(',
    `    model=${p.model === null ? 'model' : literal(p.model)},`,
    `    messages=${CHAT_MESSAGES},`,
    '    stream=True,',
    ')',
    'for chunk in stream:',
    '    if chunk.choices:',
    '        print(chunk.choices[0].delta.content or "", end="", flush=True)',
    'print()',
  ];
  return { kind: 'python', title: 'OpenAI SDK (Python)', language: 'python', text: lines.join('\n') };
}

function javascript(p: Plan): Snippet {
  const apiKey = p.token !== null ? literal(p.token) : p.bearer ? `process.env.${TOKEN_VARIABLE}` : '"unused"';
  // Without a client certificate the SDK needs nothing but its options: Node trusts the CA
  // through NODE_EXTRA_CA_CERTS. A client certificate needs a dispatcher of undici's.
  const mtls = p.pem !== null;
  const lines = [
    mtls
      ? '// npm install openai undici; run as an ES module: node chat.mjs'
      : `// npm install openai; run as an ES module, trusting the platform CA: NODE_EXTRA_CA_CERTS=${CA_FILE} node chat.mjs`,
    ...needs(p, 'in the environment').map((l) => `// ${l}`),
    ...(mtls ? ["import { readFileSync } from 'node:fs';"] : []),
    "import OpenAI from 'openai';",
    ...(mtls
      ? [
          "import { Agent, fetch } from 'undici';",
          '',
          `const pem = readFileSync(${literal(p.pem!)});`,
          `const dispatcher = new Agent({ connect: { ca: readFileSync(${literal(CA_FILE)}), cert: pem, key: pem } });`,
        ]
      : []),
    '',
    'const client = new OpenAI({',
    `  baseURL: ${literal(`${p.base}/v1`)},`,
    `  apiKey: ${apiKey},${p.bearer ? '' : ' // the client certificate authenticates; the SDK wants a key'}`,
    ...(mtls ? ['  fetch: (url, init) => fetch(url, { ...init, dispatcher }),'] : []),
    '});',
    ...(p.model === null ? ['const model = (await client.models.list()).data[0].id; // the model is not known from the deployment'] : []),
    'const stream = await client.chat.completions.create({',
    `  model: ${p.model === null ? 'model' : literal(p.model)},`,
    `  messages: ${CHAT_MESSAGES},`,
    '  stream: true,',
    '});',
    "for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');",
    "process.stdout.write('\\n');",
  ];
  return { kind: 'javascript', title: 'OpenAI SDK (JavaScript)', language: 'javascript', text: lines.join('\n') };
}

function grpcurl(d: SnippetDeployment, p: Plan): Snippet {
  // gRPC is routed by host only; grpcurl needs the port even when it is 443.
  const target = d.endpoint_url.includes(':') ? d.endpoint_url : `${d.endpoint_url}:443`;
  const auth = p.token !== null ? [`-H ${shellWord(`authorization: Bearer ${p.token}`)}`] : p.bearer ? [`-H "authorization: Bearer $${TOKEN_VARIABLE}"`] : [];
  const tls = [`-cacert ${CA_FILE}`, ...(p.pem !== null ? [`-cert ${shellWord(p.pem)} -key ${shellWord(p.pem)}`] : [])].join(' ');
  const call =
    p.model === null
      ? [`${shellWord(target)} inference.GRPCInferenceService/ServerReady`]
      : [`-d ${shellWord(`{"name": ${JSON.stringify(p.model)}}`)}`, `${shellWord(target)} inference.GRPCInferenceService/ModelReady`];
  const lines = [`grpcurl ${tls} -import-path proto -proto inference.proto`, ...auth, ...call];
  const comments = [
    ...needs(p, `export ${TOKEN_VARIABLE}=<token>`),
    "proto/inference.proto: the v2 inference protocol, in the infergate package's proto/ folder",
  ].map((l) => `# ${l}`);
  return { kind: 'grpcurl', title: 'grpcurl (v2 inference protocol)', language: 'shell', text: [...comments, lines.join(' \\\n  ')].join('\n') };
}

/** The snippets that call the deployment: grpcurl for gRPC; curl, Python and JavaScript for HTTP. */
export function callSnippets(d: SnippetDeployment, o: SnippetOptions = {}): Snippet[] {
  const p = plan(d, o);
  if (d.protocol === 'grpc') return [grpcurl(d, p)];
  return [curl(p), python(p), javascript(p)];
}
