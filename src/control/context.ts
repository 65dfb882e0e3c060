// Owns the shapes every part of the control API shares: what it is built from (ControlDeps),
// what each route gets (ControlContext: the deps and the services), the fastify instance type
// and the body limit. Apart from app.ts so that routes depend on it and app.ts on the routes,
// without a cycle.

import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Clock } from '../core/clock.js';
import type { Sealer } from '../core/secrets.js';
import type { Catalog } from '../domain/catalog.js';
import type { HostCommandPolicy } from '../domain/host-commands.js';
import type { ImageMap } from '../domain/image-map.js';
import type { ActivitySource, LogSource, RegistryGate, RevisionMetricsSource, ShellProvider } from '../domain/ports.js';
import type { CertificateAuthority } from '../pki/ca.js';
import type { Store } from '../store/store.js';
import type { CertificateService } from './certificate-service.js';
import type { Credentials } from './credentials.js';
import type { DeploymentService } from './deployment-service.js';
import type { RecordIndex } from './record-index.js';
import type { AuditLog } from './audit-log.js';
import type { SessionAuthenticator } from './principal.js';
import type { IdentityService } from '../identity/identity.js';
import type { EndpointAddress } from './render.js';

export const BODY_LIMIT = 1024 * 1024;

export interface ControlDeps {
  store: Store;
  catalog: Catalog;
  /** Images the runtime runs by itself (an unknown image needs a command). */
  images: ImageMap;
  gpuQuota: number;
  sealer: Sealer;
  clock: Clock;
  endpoint: EndpointAddress;
  /** The platform CA: issues client certificates. */
  ca: CertificateAuthority;
  /** A pino logger (fastify's own); none means silent. */
  logger?: FastifyBaseLogger;
  https?: { cert: Buffer; key: Buffer } | null;
  /** The replicas' logs (the runtime's files); null: this process has no runtime (no logs). */
  logs: LogSource | null;
  /** Ready replicas to open a terminal in (the controller); null: none in this process. */
  shells?: ShellProvider | null;
  /** The autoscaler's activity history; null or absent: this process runs no autoscaler. */
  activity?: ActivitySource | null;
  /** What the gateways measured per revision (where the autoscaler runs); null or absent: none in this process. */
  revisionMetrics?: RevisionMetricsSource | null;
  /** Who may deploy host commands; `infergate serve` passes what its sandbox probe found. */
  hostCommands?: HostCommandPolicy;
  /**
   * Which registry hosts the container daemon may pull from (--registries); asked where images
   * run in containers (hostCommands.containers). Absent: any host that is not loopback,
   * link-local or unspecified (no DNS lookup, no listener known).
   */
  registries?: RegistryGate;
  /** Client-side timeouts of the listener; the defaults are Node's and fastify's. */
  timeouts?: ListenerTimeouts;
  /** People's sessions, where they sign in through an identity provider; absent: service-account keys only. */
  sessions?: SessionAuthenticator | null;
  /** Sign-in through the identity provider (the /auth routes); serve passes the same object as `sessions`. Absent: /auth answers that sign-in is not configured. */
  identity?: IdentityService | null;
  /** The web console's build (index.html and assets/); default dist/console; null: no console at `/`. */
  consoleDir?: string | null;
}

export interface ListenerTimeouts {
  headersMs: number;
  keepAliveMs: number;
  tlsHandshakeMs: number;
}

/**
 * The policy of an app built without one (API tests, embedders): such an app runs no
 * replicas itself, so there is no sandbox here to probe and the runtime that runs them keeps
 * its own check; what the API must still hold is the role rule — admins only.
 */
export const EMBEDDED_HOST_COMMANDS: HostCommandPolicy = { sandboxed: true, allowUnsandboxed: false, allowMembers: false };

export interface ControlContext {
  deps: ControlDeps;
  deployments: DeploymentService;
  credentials: Credentials;
  certificates: CertificateService;
  /** What the checks and lists need of every record, kept from the change feed. */
  index: RecordIndex;
  /** The audit log: the only writer of audit entries (sign-in events go through it too). */
  audit: AuditLog;
}

export type ControlApp = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

