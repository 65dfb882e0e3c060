// Owns the certificate routes: client certificates for mTLS endpoints — issue, list, read,
// download as one .pem (certificate and private key), change the cap on the X-Priority class
// of its requests (PATCH max_priority; whoever may issue), revoke — all within the request's
// project: another project's certificate is answered as one that does not exist.

import { Type } from '../../core/typebox.js';
import type { ControlApp, ControlContext } from '../context.js';
import type { CertificateRecord } from '../../domain/records.js';
import { listRecords, pageAnswer, PageQuery, PageResponse } from '../paging.js';
import { renderCertificate, type DeploymentBinding } from '../render.js';
import { callerName } from '../caller.js';
import { CertificateCreateRequest, CertificateResponse, CredentialUpdateRequest, ErrorResponse, IdParams } from '../schemas.js';

export function registerCertificateRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['certificates'];
  /**
   * The deployments that may accept each certificate, from the record index (no deployment is
   * read): those bound to it, and the one it was issued for. renderCertificate keeps those that do.
   */
  const candidates = async (project: string): Promise<(c: CertificateRecord) => DeploymentBinding[]> => {
    const index = await ctx.index.current();
    const byBound = new Map<number, DeploymentBinding[]>();
    for (const d of index.deployments(project)) {
      if (d.auth.client_certificate_id === null) continue;
      const list = byBound.get(d.auth.client_certificate_id);
      if (list) list.push(d);
      else byBound.set(d.auth.client_certificate_id, [d]);
    }
    return (c) => {
      const found = c.deployment_id === null ? undefined : index.deployment(c.deployment_id);
      const issuedFor = found?.project === project ? found : undefined;
      return [...(byBound.get(c.id) ?? []), ...(issuedFor ? [issuedFor] : [])];
    };
  };
  const render = async (c: CertificateRecord, project: string) => renderCertificate(c, (await candidates(project))(c));

  app.post(
    '/certificates',
    { schema: { tags, body: CertificateCreateRequest, response: { 201: CertificateResponse, 400: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const cert = await ctx.certificates.create(request.body, request.project);
      request.log.info({ certificate: cert.id, project: request.project, max_priority: cert.max_priority ?? null, by: callerName(request) }, 'client certificate issued');
      return reply.status(201).send(await render(cert, request.project));
    },
  );

  app.get('/certificates', { schema: { tags, querystring: PageQuery, response: { 200: PageResponse(CertificateResponse), 400: ErrorResponse } } }, async (request) => {
    const { records, page } = await listRecords(ctx.deps.store, ctx.index, 'certificate', request.query, 'certificates', { project: request.project });
    const of = await candidates(request.project);
    return pageAnswer(records.map((c) => renderCertificate(c, of(c))), page);
  });

  app.get('/certificates/:id', { schema: { tags, params: IdParams, response: { 200: CertificateResponse, 404: ErrorResponse } } }, async (request) =>
    render(await ctx.certificates.get(request.params.id, request.project), request.project),
  );

  app.patch(
    '/certificates/:id',
    { schema: { tags, params: IdParams, body: CredentialUpdateRequest, response: { 200: CertificateResponse, 400: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request) => {
      const cert = await ctx.certificates.setMaxPriority(request.params.id, request.body.max_priority, request.project);
      request.log.info({ certificate: cert.id, max_priority: cert.max_priority ?? null, by: callerName(request) }, 'client certificate cap changed');
      return render(cert, request.project);
    },
  );

  app.get(
    '/certificates/:id/pem',
    {
      schema: {
        tags,
        params: IdParams,
        description: 'The certificate followed by its private key, PEM: the file a client presents (curl --cert, an SDK certificate path).',
        response: { 200: Type.String(), 404: ErrorResponse, 409: ErrorResponse },
      },
    },
    async (request, reply) => {
      const { name, pem } = await ctx.certificates.pem(request.params.id, request.project);
      request.log.info({ certificate: request.params.id, by: callerName(request) }, 'client certificate downloaded');
      return reply
        .header('content-type', 'application/x-pem-file')
        .header('content-disposition', `attachment; filename="${name}.pem"`)
        .header('cache-control', 'no-store')
        .send(pem);
    },
  );

  app.post(
    '/certificates/:id/revoke',
    { schema: { tags, params: IdParams, response: { 200: CertificateResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request) => {
      const cert = await ctx.certificates.revoke(request.params.id, request.project);
      request.log.info({ certificate: cert.id, by: callerName(request) }, 'client certificate revoked');
      return render(cert, request.project);
    },
  );
}
