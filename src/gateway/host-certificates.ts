// Owns the per-endpoint server certificates the gateway presents by SNI: a certificate for
// exactly one endpoint host (a deployment's, or a tag's), issued by the platform CA with an
// ECDSA P-256 key the first time a handshake names that host, and kept in memory only —
// nothing to protect at rest, and a restart issues fresh ones as clients come. Until it is
// ready (a few milliseconds), and for any other name, the default certificate (`*.<domain>`,
// or the operator's) answers, so a handshake naming a one-label host never waits for
// issuance. A wildcard covers one label only, so `*.<domain>` does not name a host of another
// project (`<name>.<project>.<domain>`) nor the default project's second spelling
// (`<name>.default.<domain>`): a handshake naming one of those waits for its own certificate,
// which a client would otherwise refuse on its first connection.
//
// Issued on demand rather than when a host enters the routing table: a thousand endpoints at
// zero cost no key generation when they are created or when the service starts, and no
// memory (a TLS context holds about 30 KB) until a client calls them. The routing table says
// which hosts came and went with each change, so a change costs nothing per host that stayed.

import tls from 'node:tls';
import type { Logger } from 'pino';
import { generateEcKeyPair, issueServerCertificate, type CertificateAuthority } from '../pki/ca.js';

export class HostCertificates {
  private readonly contexts = new Map<string, tls.SecureContext>();
  private readonly issuing = new Map<string, Promise<void>>();
  /** Hosts whose issuance failed: not tried again (per handshake) until they leave the table. */
  private readonly failed = new Set<string>();
  /** The hosts of the routing table: only these get certificates of their own. */
  private hosts = new Set<string>();

  constructor(
    private readonly ca: CertificateAuthority,
    /** Client-certificate CA the contexts verify against (the platform CA). */
    private readonly clientCaPem: string,
    private readonly log: Logger,
    /** Whether the default certificate names this host (a one-label host under `*.<domain>`); all by default. */
    private readonly coveredByDefault: (host: string) => boolean = () => true,
  ) {}

  /**
   * The context for an SNI name, if its certificate has been issued. The first handshake that
   * names a host of the table starts the issuance and gets the default certificate.
   */
  contextFor(servername: string): tls.SecureContext | undefined {
    const host = servername.toLowerCase();
    const context = this.contexts.get(host);
    if (context === undefined && this.hosts.has(host) && !this.issuing.has(host) && !this.failed.has(host)) this.issue(host);
    return context;
  }

  /**
   * The context a handshake naming `servername` is answered with: as contextFor, except that
   * for a host of the table the default certificate does not name, the handshake waits for
   * the host's own certificate (undefined if its issuance failed: the default answers).
   */
  handshakeContext(servername: string): tls.SecureContext | Promise<tls.SecureContext | undefined> | undefined {
    const host = servername.toLowerCase();
    const context = this.contextFor(host);
    if (context !== undefined) return context;
    const issuing = this.issuing.get(host);
    if (issuing === undefined || this.coveredByDefault(host)) return undefined;
    return issuing.then(() => this.contexts.get(host));
  }

  /** Follows the routing table's hosts (a full read): forgets the certificates of hosts that left. */
  sync(hosts: ReadonlySet<string>): void {
    this.hosts = new Set(hosts);
    for (const host of this.contexts.keys()) if (!this.hosts.has(host)) this.contexts.delete(host);
    for (const host of this.failed) if (!this.hosts.has(host)) this.failed.delete(host);
  }

  /**
   * The same for a change of a few hosts (the routing table says which came and went): one
   * that left keeps no certificate, one that came (again) may be tried again.
   */
  update(added: readonly string[], removed: readonly string[]): void {
    for (const host of removed) {
      this.hosts.delete(host);
      this.contexts.delete(host);
      this.failed.delete(host);
    }
    for (const host of added) {
      this.hosts.add(host);
      this.failed.delete(host);
    }
  }

  /** Resolves when every issuance started so far has finished (tests use it). */
  async settled(): Promise<void> {
    while (this.issuing.size > 0) await Promise.all(this.issuing.values());
  }

  /** How many hosts have a certificate of their own now. */
  get issued(): number {
    return this.contexts.size;
  }

  private issue(host: string): void {
    const job = generateEcKeyPair()
      .then((keys) => {
        // The host may have left the table while the key was made.
        if (!this.hosts.has(host)) return;
        const issued = issueServerCertificate(this.ca, [host], { keys });
        this.contexts.set(host, tls.createSecureContext({ cert: issued.certPem, key: issued.keyPem, ca: this.clientCaPem }));
        this.log.debug({ host, serial: issued.serial }, 'issued endpoint certificate');
      })
      .catch((err: Error) => {
        this.failed.add(host);
        this.log.error({ err, host }, 'could not issue the endpoint certificate; the default certificate serves it');
      })
      .finally(() => this.issuing.delete(host));
    this.issuing.set(host, job);
  }
}
