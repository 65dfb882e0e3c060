# syntax=docker/dockerfile:1
# infergate: multi-stage build. The build stage compiles TypeScript and builds the web console
# (dist/console); the deps stage installs production dependencies and compiles the one native
# addon, node-pty (the terminal's pseudo-terminal; no Linux prebuilds, so node-gyp needs
# python3, make and g++, which stay in that stage); the runtime stage holds only those
# dependencies and the compiled output, and runs as an unprivileged user that may still bind
# 443 (CAP_NET_BIND_SERVICE on the node binary).
#
# Replicas run in a bubblewrap sandbox (own PID namespace, private view of the files). As a
# non-root user bubblewrap needs user namespaces, which Docker's default seccomp profile
# refuses: run with `--security-opt seccomp=unconfined` (or a profile that allows
# clone/unshare with CLONE_NEWUSER) to get the sandbox; without it the service says so at
# start, runs the simulated engines unsandboxed, and refuses host commands and the terminal
# unless started with --allow-unsandboxed-host-commands (the container is then the boundary).

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
RUN npm ci --ignore-scripts \
 && npx tsc -p tsconfig.build.json \
 && npx vite build --config console/vite.config.ts --logLevel warn

FROM node:20-bookworm-slim AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# Lifecycle scripts stay off for every package but node-pty, whose install step builds its addon.
RUN npm ci --omit=dev --ignore-scripts && npm rebuild node-pty

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
