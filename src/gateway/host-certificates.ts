// Owns the per-endpoint server certificates the gateway presents by SNI: when a hostname
// enters the routing table (the deployment was created), a certificate for exactly that name
// is issued by the platform CA, off the request path (key generation on the thread pool),
// and kept in memory only — nothing to protect at rest, and a restart issues fresh ones.
// Until it is ready, and for any other name, the default certificate (`*.<domain>`, or the
// operator's) answers, so a handshake never waits for issuance. The routing table says which
// hosts came and went with each change, so a change costs nothing per host that stayed.

import tls from 'node:tls';
import type { Logger } from 'pino';
import { generateRsaKeyPair, issueServerCertificate, type CertificateAuthority } from '../pki/ca.js';

export class HostCertificates {
  private readonly contexts = new Map<string, tls.SecureContext>();
  private readonly issuing = new Map<string, Promise<void>>();
  /** Hosts whose issuance failed: tried again on the next change of hosts. */
  private readonly failed = new Set<string>();
  /** Hosts removed while their certificate was being issued: it is not kept when it comes. */
  private readonly dropped = new Set<string>();

  constructor(
    private readonly ca: CertificateAuthority,
    /** Client-certificate CA the contexts verify against (the platform CA). */
    private readonly clientCaPem: string,
    private readonly log: Logger,
  ) {}

  /** The context for an SNI name, if its certificate has been issued. */
  contextFor(servername: string): tls.SecureContext | undefined {
    return this.contexts.get(servername.toLowerCase());
  }

  /** Issues certificates for new hosts and forgets those of hosts that left. */
  sync(hosts: ReadonlySet<string>): void {
    for (const host of this.contexts.keys()) if (!hosts.has(host)) this.contexts.delete(host);
    this.failed.clear();
    for (const host of this.issuing.keys()) if (!hosts.has(host)) this.dropped.add(host);
    for (const host of hosts) this.dropped.delete(host);
    for (const host of hosts) if (!this.contexts.has(host) && !this.issuing.has(host)) this.issue(host);
  }

  /** The same for a change of a few hosts: certificates for those added, none kept for those removed; one that failed before is tried again. */
  update(added: readonly string[], removed: readonly string[]): void {
    for (const host of removed) {
      this.contexts.delete(host);
      this.failed.delete(host);
      if (this.issuing.has(host)) this.dropped.add(host);
    }
    for (const host of added) this.dropped.delete(host);
    for (const host of [...added, ...this.failed]) if (!this.contexts.has(host) && !this.issuing.has(host)) this.issue(host);
  }

  /** Resolves when every issuance started so far has finished (tests and start-up use it). */
  async settled(): Promise<void> {
    while (this.issuing.size > 0) await Promise.all(this.issuing.values());
  }

  private issue(host: string): void {
    const job = generateRsaKeyPair()
      .then((keys) => {
        const issued = issueServerCertificate(this.ca, [host], { keys });
        this.failed.delete(host);
        if (this.dropped.delete(host)) return;
        this.contexts.set(host, tls.createSecureContext({ cert: issued.certPem, key: issued.keyPem, ca: this.clientCaPem }));
        this.log.debug({ host, serial: issued.serial }, 'issued endpoint certificate');
      })
      .catch((err: Error) => {
        if (this.dropped.delete(host)) return;
        this.failed.add(host);
        this.log.error({ err, host }, 'could not issue the endpoint certificate; the default certificate serves it');
      })
      .finally(() => this.issuing.delete(host));
    this.issuing.set(host, job);
  }
}
