// Owns the console's frame: sign-in gate, navigation (admin-only entries hidden for members)
// and the page for the current hash route.

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
import type { Family } from './api/types';

function useAccount() {
  return useSyncExternalStore(session.subscribe, () => sessionStorage.getItem('infergate.account'));
}

const NAV: Array<{ path: string; label: string; admin?: boolean }> = [
  { path: '/deployments', label: 'Deployments' },
  { path: '/vault', label: 'Vault tokens' },
  { path: '/registry-credentials', label: 'Registry credentials' },
  { path: '/certificates', label: 'Certificates' },
  { path: '/service-accounts', label: 'Service accounts', admin: true },
  { path: '/clusters', label: 'Clusters' },
];

export function App() {
  useAccount();
  const account = session.account();
  const path = usePath();

  useEffect(() => {
    const h1 = document.querySelector('main h1');
    document.title = h1?.textContent ? `${h1.textContent} · infergate` : 'infergate console';
  });

  if (!account || !session.signedIn()) return <SignInPage />;

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
    if (path === '/service-accounts') return account.role === 'admin' ? <ServiceAccountsPage /> : <NotAllowed />;
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
            {NAV.filter((n) => !n.admin || account.role === 'admin').map((n) => (
              <li key={n.path}>
                <a href={`#${n.path}`} aria-current={path.startsWith(n.path) ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span title={`signed in as ${account.name}`}>
            {account.name} <span className="role">{account.role}</span>
          </span>
          <button type="button" className="button small" onClick={() => void signOutEverywhere().then(() => navigate('/deployments'))}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
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

function NotAllowed() {
  return (
    <section>
      <h1>Admins only</h1>
      <p>Service accounts are managed by admin accounts. Your account is a member.</p>
    </section>
  );
}
