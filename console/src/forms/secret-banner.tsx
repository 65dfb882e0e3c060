// Owns the one-time secret that must outlive the page that made it: a create form that made an
// endpoint token on submit goes straight to the new deployment, yet the token's value exists
// only in that create answer. It is shown in a banner of its own, a separate React root at the
// top of the document (outside the app's tree, so navigating does not unmount it), until the
// user dismisses it or signs out. While it shows an endpoint token, that deployment's snippets
// carry the value (shown-tokens.ts).

import { createRoot } from 'react-dom/client';
import { SecretOnce } from '../components/copy';
import { session } from '../session';
import { shownTokens } from '../shown-tokens';

/** `endpointOf`: the deployment whose endpoint token this is, so its snippets can carry it meanwhile. */
export function showSecretBanner(title: string, value: string, endpointOf?: { family: string; id: number }): void {
  const host = document.createElement('section');
  host.setAttribute('aria-label', title);
  host.className = 'panel';
  document.body.prepend(host);
  const root = createRoot(host);
  // Signing out dismisses it too: nothing secret stays on a page nobody is signed in to.
  const unsubscribe = session.subscribe(() => {
    if (!session.signedIn()) dismiss();
  });
  if (endpointOf) shownTokens.show(endpointOf.family, endpointOf.id, value);
  function dismiss() {
    if (endpointOf) shownTokens.forget(endpointOf.family, endpointOf.id);
    unsubscribe();
    root.unmount();
    host.remove();
  }
  root.render(<SecretOnce title={title} value={value} onDismiss={dismiss} />);
}
