// Bench upstream: one process, one or more ports, standing in for a replica. Every request
// gets a fixed ~320-byte chat completion (with `usage`); POST /stream gets an SSE response of
// CHUNKS chunks DELAY ms apart, a usage chunk and [DONE]. Ports are printed as one JSON line.
//   tsx bench/upstream.ts <port> [<port> ...]   (env CHUNKS=50 DELAY_MS=5; no port: $PORT, as a replica)

import http from 'node:http';

const chunks = Number(process.env.CHUNKS ?? 50);
const delayMs = Number(process.env.DELAY_MS ?? 5);

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1,
  model: 'bench',
  system_fingerprint: 'bench-upstream',
  choices: [{ index: 0, message: { role: 'assistant', content: 'The quick brown fox jumps over the lazy dog.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 11, total_tokens: 23 },
});

function stream(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let i = 0;
  const tick = () => {
    if (res.destroyed) return;
    if (i < chunks) {
      res.write(`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"t${i} "}}],"usage":null}\n\n`);
      i++;
      setTimeout(tick, delayMs);
      return;
    }
    res.write(`data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":${chunks}}}\n\n`);
    res.end('data: [DONE]\n\n');
  };
  tick();
}

const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
  req.resume();
  req.on('end', () => {
    if (req.url?.startsWith('/stream')) return stream(res);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
    res.end(completion);
  });
};

const ports = (process.argv.length > 2 ? process.argv.slice(2) : [process.env.PORT ?? '0']).map(Number);
void Promise.all(
  ports.map(
    (port) =>
      new Promise<number>((resolve) => {
        const server = http.createServer({ keepAliveTimeout: 65_000 }, handler);
        server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
      }),
  ),
).then((bound) => console.log(JSON.stringify({ ports: bound })));
