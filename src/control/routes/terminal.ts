// Owns the interactive terminal: GET /deployments/{family}/{id}/terminal upgrades to a
// WebSocket (platform credential, like every route — from a browser, as a subprotocol entry)
// and runs the shell the runtime gives for a ready replica — inside its sandbox, as its user —
// (`?replica=` picks one). Only while the deployment is ready (the console's "Active"), and
// only where the runtime allows shells (a shell is a host command: without a sandbox, only by
// the operator's flag): otherwise 409 before the upgrade. Two modes, by subprotocol: with
// `infergate.tty.v1` the shell gets a pseudo-terminal of `?cols=&rows=` (terminal-tty.ts);
// without it, pipes — frames in are the shell's stdin, its stdout and stderr come back as text
// frames, and it reads lines, as `sh` does from a pipe (scripts and the CLI use this). The
// socket closes when the replica stops (1001) or the shell exits (1000), and the shell's
// processes are killed when it closes. Opening and closing are logged with the caller. The rule
// table (deployment.terminal) keeps viewers out: the shell sees the replica's secret environment.

import type { WebSocket } from 'ws';
import { Type } from '../../core/typebox.js';
import { PlatformError } from '../../core/errors.js';
import type { ShellTarget } from '../../domain/ports.js';
import type { Family } from '../../domain/records.js';
import type { ControlApp, ControlContext } from '../context.js';
import { IdParams } from '../schemas.js';
import { DEFAULT_TTY_SIZE, MAX_TTY_DIMENSION, shellExitReason, startTtySession } from '../terminal-tty.js';
import { TTY_PROTOCOL } from '../websocket-auth.js';



const Dimension = (what: string, fallback: number) =>
  Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TTY_DIMENSION, description: `${what} of the pseudo-terminal (infergate.tty.v1 only); default ${fallback}` }));

const TerminalQuery = Type.Object(
  {
    replica: Type.Optional(Type.String()),
    project: Type.Optional(Type.String({ description: 'the project, for a browser that cannot send X-Infergate-Project on a WebSocket' })),
    cols: Dimension('columns', DEFAULT_TTY_SIZE.cols),
    rows: Dimension('rows', DEFAULT_TTY_SIZE.rows),
  },
  { additionalProperties: false },
);

export function registerTerminalRoutes(app: ControlApp, ctx: ControlContext, family: Family): void {
  app.get(
    `/deployments/${family}/:id/terminal`,
    {
      websocket: true,
      schema: { tags: [`${family} deployments`], params: IdParams, querystring: TerminalQuery },
      // Runs before the upgrade: a refusal is a plain HTTP error response.
      preHandler: async (request) => {
        // Another project's deployment is a 404 here, before any shell is looked for.
        const d = await ctx.deployments.get(family, request.params.id, request.project);
        if (d.paused || d.status !== 'ready') {
          throw new PlatformError('conflict', `the terminal is available only while deployment ${d.name} is ready (Active); it is ${d.paused ? 'paused' : d.status}`);
        }
        if (!ctx.deps.shells) throw new PlatformError('conflict', 'this process runs no replicas (--role gateway): open the terminal on the control process');
        const refusal = ctx.deps.shells.shellRefusal();
        if (refusal !== null) throw new PlatformError('conflict', refusal);
        const target = ctx.deps.shells.shellTarget(d.id, request.query.replica);
        if (!target) {
          const which = request.query.replica ? `replica ${request.query.replica} is not a ready replica` : 'no replica is ready';
          throw new PlatformError('conflict', `cannot open a terminal in ${d.name}: ${which}`);
        }
      },
    },
    (socket, request) => {
      const params = request.params as { id: number };
      const query = request.query as { replica?: string; cols?: number; rows?: number };
      const shells = ctx.deps.shells;
      const target = shells?.shellTarget(params.id, query.replica);
      if (!shells || !target) {
        socket.close(1011, 'the replica went away');
        return;
      }
      const mode = socket.protocol === TTY_PROTOCOL ? 'tty' : 'pipe';
      const by = request.principal?.name;
      request.log.info({ deployment_id: params.id, replica: target.replica, by, mode }, 'terminal opened');
      const cannotStart = (err: Error) => socket.close(1011, `cannot start a shell: ${err.message}`.slice(0, 120));
      const kill =
        mode === 'tty'
          ? startTtySession(socket, target.launcher, target, { cols: query.cols ?? DEFAULT_TTY_SIZE.cols, rows: query.rows ?? DEFAULT_TTY_SIZE.rows }, cannotStart)?.kill
          : startPipeShell(socket, target, cannotStart);
      if (!kill) return;
      socket.on('close', () => {
        kill();
        request.log.info({ deployment_id: params.id, replica: target.replica, by, mode }, 'terminal closed');
      });
      target.onGone(() => {
        if (socket.readyState === socket.OPEN) socket.close(1001, 'the replica stopped');
        kill();
      });
    },
  );
}

/** The shell on pipes, without a terminal; returns what kills its process group. */
function startPipeShell(socket: WebSocket, target: ShellTarget, cannotStart: (err: Error) => void): () => void {
  const shell = target.launcher.pipe(target);
  shell.onOutput((chunk) => {
    if (socket.readyState === socket.OPEN) socket.send(chunk.toString('utf8'));
  });
  shell.onError(cannotStart);
  shell.onExit((status) => {
    if (socket.readyState === socket.OPEN) socket.close(1000, shellExitReason(status));
  });
  socket.on('message', (data: Buffer) => shell.write(data));
  return () => shell.kill();
}
