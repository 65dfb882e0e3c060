// Owns GET /ca.crt: the platform CA's certificate (PEM), the trust anchor a client of an endpoint
// passes to curl --cacert or its SDK's TLS settings when the gateway presents the certificates
// this CA issues (the default; an operator's --tls-cert replaces them on the endpoint hosts).
// Public by nature, and served without a credential (like the health routes), so the line a
// "Call it" snippet starts with — fetching it — works before anything else is set up.

import { Type } from '../../core/typebox.js';
import type { ControlApp, ControlContext } from '../context.js';

export function registerCaRoutes(app: ControlApp, ctx: ControlContext): void {
  app.get(
    '/ca.crt',
    {
      config: { public: true },
      schema: {
        tags: ['certificates'],
        description: "The platform CA's certificate, PEM: what endpoint clients trust (curl --cacert ca.crt). The CA's key never leaves the service.",
        response: { 200: Type.String() },
      },
    },
    async (_request, reply) =>
      reply.header('content-type', 'application/x-pem-file').header('content-disposition', 'attachment; filename="ca.crt"').send(ctx.deps.ca.certPem),
  );
}
