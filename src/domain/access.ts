// Owns who may do what: the project roles (owner, developer, viewer), the platform admin above
// every project, the actions a caller takes, which role may take each, and which action every
// route of the control API is. The one table the API's routes, the console (what it shows and
// hides) and the CLI read; a route without a rule here is refused when the API starts.

/** A member's role in one project. */
export type ProjectRole = 'owner' | 'developer' | 'viewer';
export const PROJECT_ROLES: readonly ProjectRole[] = ['owner', 'developer', 'viewer'];

/** A project's name: a DNS label (it is part of endpoint hosts), at most 40 characters. */
export const PROJECT_NAME_PATTERN = /^[a-z](?:[a-z0-9-]{0,38}[a-z0-9])?$/;

/** The project every installation has; records from before projects belong to it. */
export const DEFAULT_PROJECT = 'default';

/** The project a record names; records written before projects existed belong to `default`. */
export function projectOf(record: { project?: string | null }): string {
  return record.project ?? DEFAULT_PROJECT;
}

/**
 * What a caller does. `*.read` never includes a secret, a key or a private key; those are
 * actions of their own, so a viewer (who may read) never gets one.
 */
export type Action =
  | 'project.read' // the project itself, its quota and usage
  | 'project.manage' // create, delete and set the GPU quota of projects (the admin)
  | 'member.read' // members, their roles and group bindings
  | 'member.manage' // add, change and remove members and group bindings
  | 'service_account.read'
  | 'service_account.manage' // create and delete the project's service accounts
  | 'deployment.read' // specs (secret values never), status, replicas, revisions, events, usage, metrics
  | 'deployment.manage' // create, edit, scale, pause, resume, roll back, promote, clone, delete
  | 'deployment.logs' // the replicas' logs (of a deployment that keeps them)
  | 'deployment.terminal' // a shell inside a replica (it sees the replica's secret environment)
  | 'token.read' // names and priority caps of vault tokens, never a value
  | 'token.manage'
  | 'certificate.read' // certificates' public parts
  | 'certificate.key' // a certificate's private key (its PEM bundle)
  | 'certificate.manage'
  | 'registry_credential.read' // names, users and hosts, never a password
  | 'registry_credential.manage'
  | 'registry_credential.bind' // choose the registry host a credential's password is sent to
  | 'audit.read' // the project's audit log
  | 'catalog.read' // clusters, hardware, presets, the CA certificate: the same for everyone
  | 'host_command' // deploy a command that runs on the host (an admin's, or as the operator opened it)
  | 'platform.audit' // every project's audit log
  | 'self'; // who am I, my projects, sign-out: any authenticated caller

/**
 * The roles that may take each action within their project. `admin` is the platform admin:
 * every action in every project, and the actions only it may take (an empty role list).
 */
export const ACTION_ROLES: Readonly<Record<Action, readonly ProjectRole[]>> = {
  'project.read': ['owner', 'developer', 'viewer'],
  'project.manage': [],
  'member.read': ['owner', 'developer', 'viewer'],
  'member.manage': ['owner'],
  'service_account.read': ['owner', 'developer', 'viewer'],
  'service_account.manage': ['owner'],
  'deployment.read': ['owner', 'developer', 'viewer'],
  'deployment.manage': ['owner', 'developer'],
  'deployment.logs': ['owner', 'developer'],
  'deployment.terminal': ['owner', 'developer'],
  'token.read': ['owner', 'developer', 'viewer'],
  'token.manage': ['owner', 'developer'],
  'certificate.read': ['owner', 'developer', 'viewer'],
  'certificate.key': ['owner', 'developer'],
  'certificate.manage': ['owner', 'developer'],
  'registry_credential.read': ['owner', 'developer', 'viewer'],
  'registry_credential.manage': ['owner', 'developer'],
  // Whoever binds a credential chooses where its password goes; a developer uses credentials it cannot read.
  'registry_credential.bind': ['owner'],
  'audit.read': ['owner'],
  'catalog.read': ['owner', 'developer', 'viewer'],
  'host_command': [],
  'platform.audit': [],
  self: ['owner', 'developer', 'viewer'],
};

/** Whether a caller with `role` in a project (null: none) may take `action` there. */
export function may(role: ProjectRole | null, admin: boolean, action: Action): boolean {
  if (admin) return true;
  if (action === 'self') return true;
  return role !== null && ACTION_ROLES[action].includes(role);
}

/** Why a role may not take an action, in words for a console's disabled button or a 403. */
export function refusalReason(role: ProjectRole | null, action: Action): string {
  const allowed = ACTION_ROLES[action];
  if (allowed.length === 0) return `only the platform admin may ${ACTION_WORDS[action]}`;
  const who = allowed.map((r) => `${r}s`).join(' and ');
  return role === null ? `you are not a member of this project` : `only ${who} may ${ACTION_WORDS[action]}; you are a ${role}`;
}

export const ACTION_WORDS: Readonly<Record<Action, string>> = {
  'project.read': 'read the project',
  'project.manage': 'create projects, delete them and set their GPU quota',
  'member.read': 'list the members',
  'member.manage': 'manage members and their roles',
  'service_account.read': 'list service accounts',
  'service_account.manage': 'create and delete service accounts',
  'deployment.read': 'read deployments',
  'deployment.manage': 'change deployments',
  'deployment.logs': 'read replica logs',
  'deployment.terminal': 'open a terminal in a replica',
  'token.read': 'list vault tokens',
  'token.manage': 'manage vault tokens',
  'certificate.read': 'list certificates',
  'certificate.key': "download a certificate's private key",
  'certificate.manage': 'manage client certificates',
  'registry_credential.read': 'list registry credentials',
  'registry_credential.manage': 'manage registry credentials',
  'registry_credential.bind': 'bind a registry credential to its registry host',
  'audit.read': "read the project's audit log",
  'catalog.read': 'read the catalog',
  'host_command': 'deploy a command that runs on the host',
  'platform.audit': "read every project's audit log",
  self: 'read who they are',
};

/**
 * Every route of the control API (`METHOD path` as registered with fastify, family routes
 * once per family) and the action it is. `public`: health and the API description, which
 * anyone may call; `auth`: the sign-in flow itself, before a caller is known.
 */
export type RouteRule = Action | 'public' | 'auth';

/** The routes of one deployment family, `{family}` standing for general and orchestrated. */
const FAMILY_ROUTES: Readonly<Record<string, RouteRule>> = {
  'POST /deployments/{family}': 'deployment.manage',
  'GET /deployments/{family}': 'deployment.read',
  'GET /deployments/{family}/{id}': 'deployment.read',
  'PATCH /deployments/{family}/{id}': 'deployment.manage',
  'DELETE /deployments/{family}/{id}': 'deployment.manage',
  'POST /deployments/{family}/{id}/pause': 'deployment.manage',
  'POST /deployments/{family}/{id}/resume': 'deployment.manage',
  'POST /deployments/{family}/{id}/rollback': 'deployment.manage',
  'POST /deployments/{family}/{id}/clone': 'deployment.manage',
  'GET /deployments/{family}/{id}/revisions': 'deployment.read',
  'GET /deployments/{family}/{id}/revisions/{n}': 'deployment.read',
  'GET /deployments/{family}/{id}/replicas': 'deployment.read',
  'GET /deployments/{family}/{id}/logs': 'deployment.logs',
  'GET /deployments/{family}/{id}/usage': 'deployment.read',
  'GET /deployments/{family}/{id}/activity': 'deployment.read',
  'GET /deployments/{family}/{id}/revision-metrics': 'deployment.read',
  'GET /deployments/{family}/{id}/events': 'deployment.read',
  'GET /deployments/{family}/{id}/terminal': 'deployment.terminal',
};

/**
 * Every route and its rule, keyed `METHOD /path/{param}` as the OpenAPI document spells it.
 * The control API refuses to start with a route missing here, and a test walks the OpenAPI
 * document with every role against this table.
 */
export const ROUTE_RULES: Readonly<Record<string, RouteRule>> = {
  ...Object.fromEntries(
    ['general', 'orchestrated'].flatMap((family) =>
      Object.entries(FAMILY_ROUTES).map(([route, rule]) => [route.replace('{family}', family), rule] as const),
    ),
  ),
  'GET /healthz': 'public',
  // The web console's files (control/console-assets.ts).
  'GET /': 'public',
  'GET /assets/*': 'public',
  'GET /readyz': 'public',
  'GET /openapi.json': 'public',

  'POST /vault/tokens': 'token.manage',
  'GET /vault/tokens': 'token.read',
  'GET /vault/tokens/{id}': 'token.read',
  'PATCH /vault/tokens/{id}': 'token.manage',
  'DELETE /vault/tokens/{id}': 'token.manage',

  'POST /vault/registry-credentials': 'registry_credential.manage',
  'GET /vault/registry-credentials': 'registry_credential.read',
  'GET /vault/registry-credentials/{id}': 'registry_credential.read',
  'PATCH /vault/registry-credentials/{id}': 'registry_credential.bind',
  'DELETE /vault/registry-credentials/{id}': 'registry_credential.manage',

  'POST /certificates': 'certificate.manage',
  'GET /certificates': 'certificate.read',
  'GET /certificates/{id}': 'certificate.read',
  'PATCH /certificates/{id}': 'certificate.manage',
  'GET /certificates/{id}/pem': 'certificate.key',
  'POST /certificates/{id}/revoke': 'certificate.manage',
  // The CA's certificate is public by nature: a client fetches it before it holds any credential.
  'GET /ca.crt': 'public',

  'POST /service-accounts': 'service_account.manage',
  'GET /service-accounts': 'service_account.read',
  'GET /service-accounts/{id}': 'service_account.read',
  'DELETE /service-accounts/{id}': 'service_account.manage',

  'GET /clusters': 'catalog.read',
  'GET /clusters/{id}': 'catalog.read',
  'GET /clusters/{id}/hardware': 'catalog.read',
  'GET /quota': 'project.read',
  'GET /presets': 'catalog.read',
  'GET /presets/{id}': 'catalog.read',
  'GET /whoami': 'self',

  // Projects and their members (the project in the path, not the X-Infergate-Project header).
  'GET /projects': 'self',
  'POST /projects': 'project.manage',
  'GET /projects/{project}': 'project.read',
  'PATCH /projects/{project}': 'project.manage',
  'DELETE /projects/{project}': 'project.manage',
  'GET /projects/{project}/usage': 'project.read',
  'GET /projects/{project}/members': 'member.read',
  'PUT /projects/{project}/members/{subject}': 'member.manage',
  'DELETE /projects/{project}/members/{subject}': 'member.manage',

  // The audit log: an owner reads their project's; the admin every project's.
  'GET /audit': 'audit.read',

  // Signing in through the identity provider (OpenID Connect).
  'GET /auth/config': 'public',
  'GET /auth/login': 'auth',
  'GET /auth/callback': 'auth',
  'POST /auth/device': 'auth',
  'POST /auth/device/token': 'auth',
  'POST /auth/token': 'auth',
  'POST /auth/logout': 'self',
};

/** The rule of a route as fastify registered it (`/deployments/general/:id`), or undefined. */
export function ruleOfRoute(method: string, fastifyPath: string): RouteRule | undefined {
  const openapi = fastifyPath.replace(/:([A-Za-z_]+)/g, '{$1}');
  return ROUTE_RULES[`${method.toUpperCase()} ${openapi}`];
}

/**
 * What a caller may and may not do in a project, in the table's order (`self` left out): what
 * `infergate whoami` prints, from the same table the API enforces.
 */
export function permissionsOf(role: ProjectRole | null, admin: boolean): { may: Action[]; mayNot: Action[] } {
  const actions = (Object.keys(ACTION_ROLES) as Action[]).filter((a) => a !== 'self');
  return { may: actions.filter((a) => may(role, admin, a)), mayNot: actions.filter((a) => !may(role, admin, a)) };
}
