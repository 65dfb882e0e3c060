// Owns the create step both create forms share: make the endpoint token on submit when asked
// (kept in the form, so a refused create reuses it on the next try), POST the body, show a token
// made here once beyond the page, and go to the new deployment.

import { api } from '../api/client';
import type { Deployment, Family } from '../api/types';
import { navigate } from '../router';
import { createVaultToken, tokenNameFor } from './endpoint-protection';
import { showSecretBanner } from './secret-banner';
import type { AuthValues, CreatedToken } from './values';

/** Creates the deployment; returns the body sent (for placing a refusal), or throws with it. */
export async function createDeployment<B extends object>(
  family: Family,
  name: string,
  body: B,
  auth: AuthValues,
  createTokenNow: boolean,
  keepToken: (token: CreatedToken) => void,
): Promise<void> {
  let created = auth.choice === 'new' ? auth.created : null;
  if (createTokenNow) {
    created = await createVaultToken(tokenNameFor(name));
    keepToken(created);
  }
  const sent = created ? { ...body, endpoint_bearer_token: created.value } : body;
  try {
    const d = await api.post<Deployment>(`/deployments/${family}`, sent);
    // Its value exists only in the vault's create answer: show it once, beyond this page.
    if (createTokenNow && created) showSecretBanner(`Endpoint token "${created.name}" for ${d.name}`, created.value, { family, id: d.id });
    navigate(`/deployments/${family}/${d.id}`);
  } catch (err) {
    throw new RefusedCreate(err, sent);
  }
}

/** A refusal, with the body that was sent (the token made on submit included). */
export class RefusedCreate extends Error {
  constructor(
    override readonly cause: unknown,
    readonly sent: object,
  ) {
    super('create refused');
  }
}
