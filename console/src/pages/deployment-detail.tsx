// Owns the deployment detail: status, what a wait is waiting for and why (the controller's
// status reason) first, then the tabs (Overview, Logs, Terminal, Usage, Activity, Settings),
// each its own hash route. The deployment refreshes by itself every two seconds.

import { lazy, Suspense } from 'react';
import type { Deployment, Family } from '../api/types';
import { usePoll } from '../hooks';
import type { Account } from '../session';
import { StatusBadge, StatusReason } from '../components/status';
import { Tabs } from '../components/tabs';
import { progressLine } from '../components/deployment-bits';
import { OverviewTab } from '../tabs/overview';
import { LogsTab } from '../tabs/logs';
import { UsageTab } from '../tabs/usage';
import { ActivityTab } from '../tabs/activity';
import { SettingsTab } from '../tabs/settings';
import { FormError } from '../components/form';
import { Allowed, useAccess } from '../access';

// xterm.js is the largest part of the console: loaded only when the Terminal tab opens.
const TerminalTab = lazy(() => import('../tabs/terminal').then((m) => ({ default: m.TerminalTab })));

const TABS = ['Overview', 'Logs', 'Terminal', 'Usage', 'Activity', 'Settings'];

export function DeploymentDetailPage({ family, id, tab, account }: { family: Family; id: number; tab: string; account: Account }) {
  const { data: d, error, reload } = usePoll<Deployment>(`/deployments/${family}/${id}`, 2000);
  const access = useAccess();
  /** A tab whose action the role may not take says why instead of opening. */
  const refused = (action: 'deployment.logs' | 'deployment.terminal') =>
    access.may(action) ? null : (
      <div className="notice" role="note" data-refused={action}>
        {access.reason(action)}.
      </div>
    );
  const base = `/deployments/${family}/${id}`;

  if (!d) {
    return (
      <section>
        <p>
          <a href="#/deployments">Deployments</a>
        </p>
        {error ? (
          <div className="form-error" role="alert">
            {error.message}
          </div>
        ) : (
          <p className="subtle">Loading…</p>
        )}
      </section>
    );
  }

  const progress = progressLine(d);
  const current = TABS.map((t) => t.toLowerCase()).includes(tab) ? tab : 'overview';
  return (
    <section>
      <p className="subtle">
        <a href="#/deployments">Deployments</a> / {d.family}
      </p>
      <div className="page-head">
        <h1>{d.name}</h1>
        <StatusBadge status={d.status} />
        {progress && (
          <span className="progress" role="status">
            {progress}
          </span>
        )}
      </div>
      <StatusReason reason={d.status_reason} className="lead" />
      {d.rollout?.state === 'failed' && (
        <div className="form-error" role="alert">
          Revision {d.rollout.revision} failed{d.rollout.reason ? `: ${d.rollout.reason}` : ''}
          {d.serving_revision !== null ? `; revision ${d.serving_revision} keeps serving.` : '.'}
        </div>
      )}
      <FormError message={error ? `Refresh failed: ${error.message}` : null} />
      <Tabs tabs={TABS} current={current} base={base} label="Deployment" />
      <div role="tabpanel" id="tabpanel" aria-labelledby={`tab-${current}`}>
        {current === 'overview' && <OverviewTab d={d} onChanged={reload} />}
        {current === 'logs' && (refused('deployment.logs') ?? <LogsTab d={d} />)}
        {current === 'terminal' &&
          (refused('deployment.terminal') ?? (
            <Suspense fallback={<p className="subtle">Loading the terminal…</p>}>
              <TerminalTab d={d} />
            </Suspense>
          ))}
        {current === 'usage' && <UsageTab d={d} />}
        {current === 'activity' && <ActivityTab d={d} />}
        {current === 'settings' && (
          <Allowed action="deployment.manage">
            <SettingsTab deployment={d} account={account} onChanged={reload} />
          </Allowed>
        )}
      </div>
    </section>
  );
}
