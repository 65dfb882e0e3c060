# syntax=docker/dockerfile:1
# infergate: multi-stage build. The build stage compiles TypeScript; the runtime stage holds
# only production dependencies and the compiled output, and runs as an unprivileged user
# that may still bind 443 (CAP_NET_BIND_SERVICE on the node binary). bubblewrap sandboxes
# replicas where the container runtime allows user namespaces; elsewhere the service says so.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --ignore-scripts && npx tsc -p tsconfig.build.json

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts

FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libcap2-bin tini curl bubblewrap \
 && setcap cap_net_bind_service=+ep "$(readlink -f "$(command -v node)")" \
 && apt-get purge -y libcap2-bin && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    INFERGATE_DATA_DIR=/var/lib/infergate/data \
    INFERGATE_CERTS_DIR=/var/lib/infergate/certs \
    INFERGATE_API_HOST=127.0.0.1 \
    INFERGATE_METRICS_HOST=0.0.0.0
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY proto ./proto
RUN ln -s /app/dist/cli/main.js /usr/local/bin/infergate && chmod +x /app/dist/cli/main.js \
 && mkdir -p /var/lib/infergate && chown -R node:node /var/lib/infergate
USER node
VOLUME ["/var/lib/infergate"]
EXPOSE 443 8080 9464
# The metrics listener answers /healthz without credentials and without TLS.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${INFERGATE_METRICS_PORT:-9464}/healthz" || exit 1
ENTRYPOINT ["/usr/bin/tini", "--", "infergate"]
CMD ["serve"]
