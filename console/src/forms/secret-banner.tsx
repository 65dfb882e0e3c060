// Owns the one-time secret that must outlive the page that made it: a create form that made an
// endpoint token on submit goes straight to the new deployment, yet the token's value exists
// only in that create answer. It is shown in a banner of its own, a separate React root at the
// top of the document (outside the app's tree, so navigating does not unmount it), until the
// user dismisses it or signs out.

import { createRoot } from 'react-dom/client';
import { SecretOnce } from '../components/copy';
import { session } from '../session';

export function showSecretBanner(title: string, value: string): void {
  const host = document.createElement('section');
  host.setAttribute('aria-label', title);
  host.className = 'panel';
  document.body.prepend(host);
  const root = createRoot(host);
  // Signing out dismisses it too: nothing secret stays on a page nobody is signed in to.
  const unsubscribe = session.subscribe(() => {
    if (!session.key()) dismiss();
  });
  function dismiss() {
    unsubscribe();
    root.unmount();
    host.remove();
  }
  root.render(<SecretOnce title={title} value={value} onDismiss={dismiss} />);
}
