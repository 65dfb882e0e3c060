// Owns the client's long-running commands: `wait` (poll a deployment until it is ready — its
// current revision serving — or gone, with a progress line on a terminal and none in
// scripts; it gives up at once, exit 1 with the reason, when the deployment is failing or
// failed), `logs` (the last lines, then with -f every new one as it is written) and `exec`
// (a shell in a ready replica over the terminal WebSocket: one command on pipes with its exit
// status passed on, or an interactive pseudo-terminal when stdin is a terminal).

import type { LogLineView } from '../domain/api-views.js';
import { quote } from 'shell-quote';
import type WebSocket from 'ws';
import type { ApiClient } from './api.js';
import { componentsSummary, findDeployment, getDeployment, routeOf, type Deployment } from './deployments.js';
import { EXIT, Unreachable, WaitFailed } from './errors.js';
import type { Out } from './output.js';

const POLL_MS = 500;

export interface WaitOptions {
  for: 'ready' | 'deleted';
  timeoutMs: number;
}

/**
 * Ready: what traffic names serves — its one revision (normally the current one; an older one
 * when traffic pins it, or while a manual rollout's new revision is at 0 %), or every revision
 * of a split with a ready replica — nothing is rolling, and no replica the deployment wants is
 * missing.
 */
export function isReady(d: Deployment): boolean {
  if (d.paused || d.status !== 'ready') return false;
  if (d.rollout && d.rollout.state === 'in_progress') return false;
  const running = d.revision_replicas ?? [];
  if (running.length > 1) {
    if (!running.every((r) => r.ready >= 1)) return false;
  } else if (d.serving_revision !== (running[0]?.revision ?? d.revision)) return false;
  return Object.values(d.components).every((c) => c.ready >= Math.min(c.desired, 1));
}

/**
 * Why waiting is pointless: the deployment failed, is failing (a replica crash-loops with none
 * ready), or the current revision's rollout failed. A failing status or a failed rollout left
 * from before the current revision (the controller has not seen the edit yet) does not count.
 */
export function failureOf(d: Deployment): string | null {
  const current = d.rollout === null || d.rollout.revision === undefined || d.rollout.revision === d.revision;
  if (d.status === 'failed') return `${d.name} failed: ${d.revisions.find((r) => r.revision === d.revision)?.failure_reason ?? 'see infergate describe'}`;
  if (d.status === 'failing' && current) return `${d.name} is failing: ${d.status_reason ?? 'a replica keeps crashing'} (infergate logs ${d.name})`;
  if (d.rollout?.state === 'failed' && current) return `revision ${d.revision} of ${d.name} failed: ${d.rollout.reason ?? 'see infergate describe'}`;
  return null;
}

export async function waitFor(api: ApiClient, name: string, opts: WaitOptions, out: Out, sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))): Promise<void> {
  const started = Date.now();
  let progressShown = false;
  const progress = (text: string) => {
    if (!out.isTTY) return;
    out.write(`\r\x1b[2K${text}`);
    progressShown = true;
  };
  const done = (line: string) => {
    if (progressShown) out.write('\r\x1b[2K');
    out.write(line + '\n');
  };
  for (;;) {
    const elapsed = Math.round((Date.now() - started) / 1000);
    const d = await findDeployment(api, name);
    if (opts.for === 'deleted') {
      if (!d) return done(`${name} is deleted; its replicas drain and stop in the background`);
      progress(`${name}: deleting — ${componentsSummary(d)} (${elapsed} s)`);
    } else {
      if (!d) throw new WaitFailed(`no deployment named ${name}`);
      if (isReady(d)) return done(`${name} is ready (revision ${d.revision}; ${componentsSummary(d)})`);
      const failure = failureOf(d);
      if (failure) {
        if (progressShown) out.write('\n');
        throw new WaitFailed(failure);
      }
      progress(`${name}: ${d.status}${d.rollout?.state === 'in_progress' ? `, rolling out revision ${d.revision}` : ''} — ${componentsSummary(d)} (${elapsed} s)`);
    }
    if (Date.now() - started >= opts.timeoutMs) {
      if (progressShown) out.write('\n');
      throw new WaitFailed(`${name} was not ${opts.for} within ${Math.round(opts.timeoutMs / 1000)} s${d ? ` (${d.status}; ${componentsSummary(d)})` : ''}`);
    }
    await sleep(POLL_MS);
  }
}

export interface LogOptions {
  follow: boolean;
  tail: number;
  revision?: number;
  component?: string;
  replica?: string;
  json: boolean;
}

type LogLine = LogLineView;

export async function printLogs(api: ApiClient, name: string, opts: LogOptions, out: Out, signal: AbortSignal): Promise<void> {
  const d = await getDeployment(api, name);
  const query = new URLSearchParams({ tail: String(opts.tail) });
  if (opts.revision !== undefined) query.set('revision', String(opts.revision));
  if (opts.component) query.set('component', opts.component);
  if (opts.replica) query.set('replica', opts.replica);
  const print = (l: LogLine) => out.write(opts.json ? JSON.stringify(l) + '\n' : `${l.replica} ${l.line}\n`);
  if (!opts.follow) {
    const answer = await api.get<{ logging: boolean; message?: string; lines: LogLine[] }>(`${routeOf(d)}/logs?${query}`);
    if (!answer.logging && answer.message) process.stderr.write(`${answer.message}\n`);
    for (const l of answer.lines) print(l);
    return;
  }
  query.set('follow', 'true');
  await api.events(`${routeOf(d)}/logs?${query}`, (data) => print(data as LogLine), signal);
}

export interface ExecOptions {
  replica?: string;
  command: string[];
}

/** The exit status in a terminal's close reason ("the shell exited with status N"). */
export function exitStatusOf(code: number, reason: string): number {
  const m = /with status (\d+)/.exec(reason);
  if (m) return Number(m[1]);
  return code === 1000 ? EXIT.ok : EXIT.refused;
}

export async function exec(api: ApiClient, name: string, opts: ExecOptions): Promise<number> {
  const d = await getDeployment(api, name);
  const interactive = opts.command.length === 0 && process.stdin.isTTY === true;
  const query = new URLSearchParams();
  if (opts.replica) query.set('replica', opts.replica);
  if (interactive) {
    query.set('cols', String(process.stdout.columns || 80));
    query.set('rows', String(process.stdout.rows || 24));
  }
  const socket = api.websocket(`${routeOf(d)}/terminal?${query}`, interactive ? ['infergate.tty.v1'] : []);
  return new Promise<number>((resolve, reject) => {
    let opened = false;
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () => {
        let message = `the terminal was refused (${res.statusCode})`;
        try {
          message = (JSON.parse(body) as { error: { message: string } }).error.message;
        } catch {
          // not the API's error shape
        }
        reject(new WaitFailed(message));
      });
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!opened) reject(new Unreachable(`cannot open the terminal at ${api.connection.api} (${err.code ?? err.message})`));
    });
    socket.on('open', () => {
      opened = true;
      if (interactive) startInteractive(socket);
      else if (opts.command.length > 0) socket.send(`${quote(opts.command)}\nexit\n`);
      else {
        process.stdin.on('data', (chunk: Buffer) => socket.send(chunk));
        process.stdin.on('end', () => socket.send('exit\n'));
      }
    });
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      process.stdout.write(isBinary ? data : data.toString('utf8'));
    });
    socket.on('close', (code: number, reason: Buffer) => {
      if (interactive) stopInteractive();
      if (code === 1001) process.stderr.write(`infergate: ${reason.toString() || 'the replica stopped'}\n`);
      resolve(exitStatusOf(code, reason.toString()));
    });
  });
}

function startInteractive(socket: WebSocket): void {
  process.stdin.setRawMode(true);
  process.stdin.resume();
  process.stdin.on('data', (chunk: Buffer) => socket.send('0' + chunk.toString('utf8')));
  process.stdout.on('resize', () => socket.send('1' + JSON.stringify({ cols: process.stdout.columns, rows: process.stdout.rows })));
}

function stopInteractive(): void {
  if (process.stdin.isTTY) process.stdin.setRawMode(false);
  process.stdin.pause();
}
