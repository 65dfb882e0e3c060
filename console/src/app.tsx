// Owns the console's frame: sign-in gate, the project switcher, navigation (entries the
// role may not use hidden, by the rule table of src/domain/access.ts) and the page for the
// current hash route, mounted afresh when the project changes.

import { useEffect, useSyncExternalStore } from 'react';
import { session } from './session';
import { signOutEverywhere } from './api/client';
import { match, navigate, usePath } from './router';
import { SignInPage } from './pages/sign-in';
import { DeploymentListPage } from './pages/deployment-list';
import { DeploymentDetailPage } from './pages/deployment-detail';
import { CreateChooserPage } from './pages/create-chooser';
import { CreateGeneralPage } from './pages/create-general';
import { CreateOrchestratedPage } from './pages/create-orchestrated';
import { VaultPage } from './pages/vault';
import { RegistryCredentialsPage } from './pages/registry-credentials';
import { CertificatesPage } from './pages/certificates';
import { ServiceAccountsPage } from './pages/service-accounts';
import { ClustersPage } from './pages/clusters';
import { MembersPage } from './pages/members';
import { AuditPage } from './pages/audit';
import { AccessProvider, useAccess } from './access';
import { ProjectSwitcher } from './components/project-switcher';
import { projectChoice } from './project';
import type { Action } from '../../src/domain/access';
import type { Family } from './api/types';

function useAccount() {
  return useSyncExternalStore(session.subscribe, () => sessionStorage.getItem('infergate.account'));
}

/** The pages; one with an action is shown to those who may take it. */
const NAV: Array<{ path: string; label: string; action?: Action }> = [
  { path: '/deployments', label: 'Deployments' },
  { path: '/vault', label: 'Vault tokens' },
  { path: '/registry-credentials', label: 'Registry credentials' },
  { path: '/certificates', label: 'Certificates' },
  { path: '/members', label: 'Members' },
  { path: '/service-accounts', label: 'Service accounts', action: 'service_account.manage' },
  { path: '/audit', label: 'Audit log', action: 'audit.read' },
  { path: '/clusters', label: 'Clusters' },
];

export function App() {
  useAccount();
  const chosen = useSyncExternalStore(projectChoice.subscribe, projectChoice.get);
  const account = session.account();
  if (!account || !session.signedIn()) return <SignInPage />;
  return (
    <AccessProvider chosen={chosen}>
      <Frame account={account} />
    </AccessProvider>
  );
}

function Frame({ account }: { account: NonNullable<ReturnType<typeof session.account>> }) {
  const access = useAccess();
  const path = usePath();

  useEffect(() => {
    const h1 = document.querySelector('main h1');
    document.title = h1?.textContent ? `${h1.textContent} · infergate` : 'infergate console';
  });

  const page = (() => {
    let m: Record<string, string> | null;
    if (path === '/deployments' || path === '/') return <DeploymentListPage />;
    if (path === '/deployments/new') return <CreateChooserPage />;
    if ((m = match('/deployments/new/:family', path))) {
      if (m.family === 'general') return <CreateGeneralPage />;
      if (m.family === 'orchestrated') return <CreateOrchestratedPage />;
    }
    if ((m = match('/deployments/:family/:id', path)) || (m = match('/deployments/:family/:id/:tab', path))) {
      const family = m.family as Family;
      if (family === 'general' || family === 'orchestrated') return <DeploymentDetailPage family={family} id={Number(m.id)} tab={m.tab ?? 'overview'} account={account} />;
    }
    if (path === '/vault') return <VaultPage />;
    if (path === '/registry-credentials') return <RegistryCredentialsPage />;
    if (path === '/certificates') return <CertificatesPage />;
    if (path === '/service-accounts') return access.may('service_account.manage') ? <ServiceAccountsPage /> : <NotAllowed title="Service accounts" reason={access.reason('service_account.manage')} />;
    if (path === '/members') return <MembersPage />;
    if (path === '/audit') return <AuditPage />;
    if (path === '/clusters') return <ClustersPage />;
    return <NotFound />;
  })();

  return (
    <div className="frame">
      <a className="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header className="topbar">
        <a className="brand" href="#/deployments">
          infergate
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.filter((n) => !n.action || access.may(n.action)).map((n) => (
              <li key={n.path}>
                <a href={`#${n.path}`} aria-current={path.startsWith(n.path) ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <ProjectSwitcher />
          <span title={`signed in as ${account.name}`}>
            {account.name} <span className="role">{access.admin ? 'admin' : (access.role ?? account.role)}</span>
          </span>
          <button type="button" className="button small" onClick={() => void signOutEverywhere().then(() => navigate('/deployments'))}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1} key={access.project}>
        {page}
      </main>
    </div>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Not found</h1>
      <p>
        This page does not exist. <a href="#/deployments">Back to deployments</a>.
      </p>
    </section>
  );
}

function NotAllowed({ title, reason }: { title: string; reason: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p className="notice" role="note">
        {reason}.
      </p>
    </section>
  );
}
