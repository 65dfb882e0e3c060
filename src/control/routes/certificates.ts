// Owns the certificate routes: client certificates for mTLS endpoints — issue, list, read,
// download as one .pem (certificate and private key), change the cap on the X-Priority class
// of its requests (PATCH max_priority; any service account, as for issuing), revoke.

import { Type } from '../../core/typebox.js';
import type { ControlApp, ControlContext } from '../context.js';
import { renderCertificate } from '../render.js';
import { CertificateCreateRequest, CertificateResponse, CredentialUpdateRequest, ErrorResponse, IdParams } from '../schemas.js';

export function registerCertificateRoutes(app: ControlApp, ctx: ControlContext): void {
  const tags = ['certificates'];
  const deployments = async () => (await ctx.deps.store.list('deployment')).map((d) => d.value);

  app.post(
    '/certificates',
    { schema: { tags, body: CertificateCreateRequest, response: { 201: CertificateResponse, 400: ErrorResponse, 409: ErrorResponse } } },
    async (request, reply) => {
      const cert = await ctx.certificates.create(request.body);
      request.log.info({ certificate: cert.id, max_priority: cert.max_priority ?? null, by: request.account?.name }, 'client certificate issued');
      return reply.status(201).send(renderCertificate(cert, await deployments()));
    },
  );

  app.get('/certificates', { schema: { tags, response: { 200: Type.Object({ items: Type.Array(CertificateResponse) }) } } }, async () => {
    const all = await deployments();
    return { items: (await ctx.certificates.list()).map((c) => renderCertificate(c, all)) };
  });

  app.get('/certificates/:id', { schema: { tags, params: IdParams, response: { 200: CertificateResponse, 404: ErrorResponse } } }, async (request) =>
    renderCertificate(await ctx.certificates.get(request.params.id), await deployments()),
  );

  app.patch(
    '/certificates/:id',
    { schema: { tags, params: IdParams, body: CredentialUpdateRequest, response: { 200: CertificateResponse, 400: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse } } },
    async (request) => {
      const cert = await ctx.certificates.setMaxPriority(request.params.id, request.body.max_priority);
      request.log.info({ certificate: cert.id, max_priority: cert.max_priority ?? null, by: request.account?.name }, 'client certificate cap changed');
      return renderCertificate(cert, await deployments());
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
      const { name, pem } = await ctx.certificates.pem(request.params.id);
      request.log.info({ certificate: request.params.id, by: request.account?.name }, 'client certificate downloaded');
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
      const cert = await ctx.certificates.revoke(request.params.id);
      request.log.info({ certificate: cert.id, by: request.account?.name }, 'client certificate revoked');
      return renderCertificate(cert, await deployments());
    },
  );
}
