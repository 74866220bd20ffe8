# syntax=docker/dockerfile:1
#
# One image for every Conclave process. The default command starts the gateway; docker-compose.yml and
# the manifests under k8s/ override it for the worker and the migration job:
#   gateway:  node dist/apps/gateway/src/main.js              (HTTP + Socket.IO on $PORT, default 3000)
#   worker:   node dist/apps/worker/src/main.js               (probes and /metrics on $WORKER_HTTP_PORT,
#                                                              default 3001; drains active jobs on SIGTERM)
#   migrate:  node dist/apps/ops/src/migrate.js               (creates the database if missing, applies migrations)
#   users:    node dist/apps/ops/src/create-user.js --name alice
#
# There is deliberately no HEALTHCHECK here: the processes differ (gateway on 3000, worker on 3001, the
# migration has no port). Their probes (GET /health/live, /health/ready) are declared in docker-compose.yml
# and in k8s/.

# ---- build: install everything (TypeScript, tsc-alias) and compile to dist/ ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
COPY scripts/install-deps.js ./scripts/
# the locked versions; scripts/install-deps.js says why this is not `npm ci`
RUN node scripts/install-deps.js
COPY tsconfig.json tsconfig.build.json ./
COPY apps ./apps
COPY libs ./libs
RUN npm run build

# ---- runtime: production dependencies and the compiled output only ----
FROM node:20-bookworm-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
COPY scripts/install-deps.js ./scripts/
RUN node scripts/install-deps.js --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
# The files stay owned by root (read-only for the app); the processes run as the image's unprivileged
# `node` user (uid 1000, which the Kubernetes manifests pin with runAsUser). Nothing is written to the
# image's filesystem at run time, so it also runs with a read-only root filesystem.
USER node
EXPOSE 3000 3001
CMD ["node", "dist/apps/gateway/src/main.js"]
