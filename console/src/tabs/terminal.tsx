// Owns the Terminal tab: xterm.js over the control API's terminal WebSocket with the
// `infergate.tty.v1` subprotocol (a pseudo-terminal on the server: echo, line editing,
// Ctrl-C and resize work as in any terminal). Frames to the server start with a channel
// character: `0` keystrokes, `1` a resize as JSON. Open only while the deployment is ready
// (Active); otherwise the tab says why. Loaded on demand: xterm.js is the console's largest part.

import { projectChoice } from '../project';
import { useEffect, useRef, useState } from 'react';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import { websocketProtocols } from '../api/client';
import type { Deployment, Items, Replica } from '../api/types';
import { usePoll } from '../hooks';

type Phase = { state: 'connecting' } | { state: 'open'; replica: string } | { state: 'closed'; reason: string };

export function TerminalTab({ d }: { d: Deployment }) {
  const replicas = usePoll<Items<Replica>>(`/deployments/${d.family}/${d.id}/replicas`, 5000);
  const ready = (replicas.data?.items ?? []).filter((r) => r.state === 'ready' && r.revision === (d.serving_revision ?? d.revision));
  const [replica, setReplica] = useState('');
  const [session, setSession] = useState(0);
  const active = d.status === 'ready' && !d.paused;

  if (!active) {
    return (
      <div className="notice" role="note">
        The terminal is available only while the deployment is Active (ready). {d.name} is {d.paused ? 'paused' : d.status.replace('_', ' ')}
        {d.status === 'pending' ? ': wait for a replica to become ready.' : '.'}
      </div>
    );
  }
  return (
    <div>
      <div className="logs-toolbar">
        <div className="field">
          <label htmlFor="term-replica">Replica</label>
          <select id="term-replica" value={replica} onChange={(e) => setReplica(e.target.value)}>
            <option value="">Any ready replica</option>
            {ready.map((r) => (
              <option key={r.name} value={r.name}>
                {r.name}
              </option>
            ))}
          </select>
        </div>
        <button type="button" className="button" onClick={() => setSession((n) => n + 1)}>
          Reconnect
        </button>
      </div>
      <TerminalView key={`${replica}:${session}`} d={d} replica={replica} />
    </div>
  );
}

function TerminalView({ d, replica }: { d: Deployment; replica: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [phase, setPhase] = useState<Phase>({ state: 'connecting' });

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const term = new Terminal({ cursorBlink: true, fontSize: 13, convertEol: false, scrollback: 5000, screenReaderMode: false });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el);
    fit.fit();
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const q = new URLSearchParams({ cols: String(term.cols), rows: String(term.rows) });
    if (replica) q.set('replica', replica);
    // A WebSocket cannot carry X-Infergate-Project: the chosen project goes in the query.
    const project = projectChoice.get();
    if (project) q.set('project', project);
    const ws = new WebSocket(`${scheme}://${location.host}/deployments/${d.family}/${d.id}/terminal?${q}`, ['infergate.tty.v1', ...websocketProtocols()]);
    ws.onopen = () => {
      setPhase({ state: 'open', replica: replica || 'a ready replica' });
      term.focus();
    };
    ws.onmessage = (e) => term.write(typeof e.data === 'string' ? e.data : new Uint8Array(e.data as ArrayBuffer));
    ws.onclose = (e) => {
      const reason = e.reason || (e.code === 1006 ? 'the connection was refused or lost (is the deployment still Active?)' : `closed (${e.code})`);
      setPhase({ state: 'closed', reason });
      term.write(`\r\n\x1b[2m[${reason}]\x1b[0m\r\n`);
    };
    const input = term.onData((data) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(`0${data}`);
    });
    const sendSize = () => {
      fit.fit();
      if (ws.readyState === WebSocket.OPEN) ws.send(`1${JSON.stringify({ cols: term.cols, rows: term.rows })}`);
    };
    const resize = new ResizeObserver(() => sendSize());
    resize.observe(el);
    return () => {
      resize.disconnect();
      input.dispose();
      ws.close();
      term.dispose();
    };
  }, [d.family, d.id, replica]);

  return (
    <div>
      <p className="subtle" role="status">
        {phase.state === 'connecting' ? 'Connecting…' : phase.state === 'open' ? `Connected to ${phase.replica}. The shell runs inside the replica's sandbox, as its user.` : `Disconnected: ${phase.reason}`}
      </p>
      <div className="terminal-box">
        {/* xterm sizes itself to this element, which has no padding of its own. */}
        <div className="terminal-screen" ref={box} data-testid="terminal" aria-label="Terminal" />
      </div>
    </div>
  );
}
