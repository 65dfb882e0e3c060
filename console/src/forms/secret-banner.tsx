// Owns the one-time secret that must outlive the page that made it: a create form that made an
// endpoint token on submit goes straight to the new deployment, yet the token's value exists
// only in that create answer. It is shown in a banner of its own, a separate React root at the
// top of the document (outside the app's tree, so navigating does not unmount it), until the
// user dismisses it.

import { createRoot } from 'react-dom/client';
import { SecretOnce } from '../components/copy';

export function showSecretBanner(title: string, value: string): void {
  const host = document.createElement('section');
  host.setAttribute('aria-label', title);
  host.className = 'panel';
  document.body.prepend(host);
  const root = createRoot(host);
  const dismiss = () => {
    root.unmount();
    host.remove();
  };
  root.render(<SecretOnce title={title} value={value} onDismiss={dismiss} />);
}
