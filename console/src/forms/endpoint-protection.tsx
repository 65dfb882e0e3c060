// Owns the endpoint protection controls, under one heading in every form ("Endpoint
// protection"): "Endpoint token" (create a new vault token, paste a value, an existing vault
// token, keep the bound one, or none) and "Make it a private endpoint?" (a client certificate
// for mTLS). An existing vault token is bound by its id
// (endpoint_token_id), since the vault shows a value only once, when it is created.

import { useState } from 'react';
import { api } from '../api/client';
import type { Deployment, VaultToken } from '../api/types';
import { CheckField, type Problems } from '../components/form';
import { SecretOnce } from '../components/copy';
import { Select, TextInput, type Option } from './inputs';
import { labelFor, PROTECTION_LABEL } from './labels';
import type { AuthValues, CreatedToken, TokenChoice } from './values';

/** Creates a vault token on the spot; its value is in this answer only. */
export async function createVaultToken(name: string): Promise<CreatedToken> {
  const t = await api.post<VaultToken>('/vault/tokens', { name });
  return { id: t.id, name: t.name, value: t.token ?? '' };
}

/** The vault token name the console gives a token it creates for an endpoint (the API's own convention). */
export const tokenNameFor = (endpoint: string): string => `${endpoint.trim() || 'console'}-endpoint`;

function choiceHint(choice: TokenChoice, endpointName: string, vault: readonly VaultToken[], created: CreatedToken | null, verb: string): string {
  if (choice === 'new') {
    return created
      ? `Uses the vault token "${created.name}" created above.`
      : `A vault token named "${tokenNameFor(endpointName)}" is created when you press ${verb}; its value is shown once.`;
  }
  if (choice === 'paste') {
    return 'A token of 8 to 512 characters (letters, digits and - . _ ~ + /). A value already in the vault binds that vault token; a new value is added to the vault.';
  }
  if (choice === 'none') return 'Only clients holding the client certificate can call the endpoint: check "Make it a private endpoint?".';
  if (choice === 'keep') return 'The endpoint keeps accepting the token it has now.';
  const token = vault.find((t) => `vault:${t.id}` === choice);
  const others = token ? token.deployments.length : 0;
  const made = token ? `, made ${new Date(token.created_at).toLocaleString()}` : '';
  return `Clients call the endpoint with the value of vault token "${token?.name ?? choice}"${made}${others > 0 ? `, which already protects ${others} other endpoint${others === 1 ? '' : 's'}` : ''}.`;
}

export function EndpointProtection({
  auth,
  onChange,
  vault,
  current,
  endpointName,
  problems,
  submitVerb,
}: {
  auth: AuthValues;
  onChange: (patch: Partial<AuthValues>) => void;
  vault: readonly VaultToken[] | null;
  /** Settings: the deployment as it stands (its bound token and certificate). */
  current: Deployment | null;
  endpointName: string;
  problems: Problems;
  /** The button that sends the form ("Create", "Save"), named in the hints. */
  submitVerb: string;
}) {
  const [createdSeen, setCreatedSeen] = useState(false);
  const tokens = vault ?? [];
  const bound = current?.endpoint_token_id != null ? tokens.find((t) => t.id === current.endpoint_token_id) : undefined;
  const hasToken = current?.endpoint_token_id != null;
  const options: Option[] = [
    ...(hasToken ? [{ value: 'keep', label: `Keep the current token${bound ? ` (${bound.name}, id ${bound.id})` : ''}` }] : []),
    { value: 'new', label: 'Create a new token' },
    { value: 'paste', label: 'Paste a token' },
    { value: 'none', label: hasToken ? 'Remove the token (client certificate only)' : 'None (client certificate only)' },
  ];
  // Told apart by name and id: no part of a token is ever shown.
  const vaultOptions = tokens.map((t) => ({ value: `vault:${t.id}`, label: `${t.name} (id ${t.id})` }));
  const pasting = auth.choice === 'paste';
  // One message for the token, shown under the control it is about; a refusal of
  // endpoint_token_id (a vault token deleted meanwhile) belongs to the select.
  const tokenProblem = problems.endpoint_bearer_token ?? problems.endpoint_token_id;
  const selectProblems: Problems = pasting ? {} : tokenProblem ? { endpoint_bearer_token: tokenProblem } : {};
  const certificate = current?.client_certificate_id ?? null;
  return (
    <fieldset className="panel">
      <legend>{PROTECTION_LABEL}</legend>
      <p className="subtle">Public endpoints are not supported: choose an endpoint token, make it a private endpoint, or both (either is then enough).</p>
      <Select
        field="endpoint_bearer_token"
        problems={selectProblems}
        value={auth.choice}
        onChange={(v) => onChange({ choice: v as TokenChoice, value: '' })}
        options={options}
        groups={[{ label: 'Existing vault tokens', options: vaultOptions }]}
        hint={choiceHint(auth.choice, endpointName, tokens, auth.created, submitVerb)}
      />
      {pasting && <TextInput label="Token value" field="endpoint_bearer_token" kind="password" problems={problems} value={auth.value} onChange={(value) => onChange({ value })} />}
      {auth.created && !createdSeen && (
        <SecretOnce title={`Endpoint token "${auth.created.name}"`} value={auth.created.value} onDismiss={() => setCreatedSeen(true)} />
      )}
      <CheckField
        label={labelFor('private_endpoint')}
        field="private_endpoint"
        checked={auth.private_endpoint}
        onChange={(private_endpoint) => onChange({ private_endpoint })}
        problems={problems}
        hint={
          current && certificate !== null
            ? `Client certificate ${certificate} is bound (Certificates page). Unchecking unbinds it: only the endpoint token will then work.`
            : `Generates a client certificate for mTLS (named "${endpointName.trim() || '<name>'}-client"); download its .pem from the Certificates page.`
        }
      />
    </fieldset>
  );
}
