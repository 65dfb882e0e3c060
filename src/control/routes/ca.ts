// Owns GET /ca.crt: the platform CA's certificate (PEM), the trust anchor a client of an endpoint
// passes to curl --cacert or its SDK's TLS settings when the gateway presents the certificates
// this CA issues (the default; an operator's --tls-cert replaces them on the endpoint hosts).
// Public by nature, yet behind the platform credential like every route but health: any role.

import { Type } from 'typebox';
import type { ControlApp, ControlContext } from '../context.js';
import { ErrorResponse } from '../schemas.js';

export function registerCaRoutes(app: ControlApp, ctx: ControlContext): void {
  app.get(
    '/ca.crt',
    {
      schema: {
        tags: ['certificates'],
        description: "The platform CA's certificate, PEM: what endpoint clients trust (curl --cacert ca.crt). The CA's key never leaves the service.",
        response: { 200: Type.String(), 401: ErrorResponse },
      },
    },
    async (_request, reply) =>
      reply.header('content-type', 'application/x-pem-file').header('content-disposition', 'attachment; filename="ca.crt"').send(ctx.deps.ca.certPem),
  );
}
