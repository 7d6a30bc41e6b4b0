# syntax=docker/dockerfile:1
# The poller (bin/poller.ts) as a container: built by `cdk deploy` with runtime "fargate" (lib/poller-service.ts),
# or by hand: docker build --platform linux/arm64 -t sqs-inbox-poller .

# ── build: install, then bundle with the project's esbuild settings (tools/build/build-poller.ts) ────────────
# It runs on the builder's own platform: the bundle is plain JavaScript, so an x86 machine builds the arm64
# image without emulation (only the runtime stage below is arm64, and it runs nothing at build time).
FROM --platform=$BUILDPLATFORM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY patches ./patches
# No install scripts: `prepare` builds the ops CLI and embedded-postgres fetches a database, neither is needed;
# esbuild's binary comes with its platform package. The reviewed postgres.js patch (patches/, which `postinstall`
# applies in a clone) is applied here by name, and a patch that does not apply fails the build.
RUN npm ci --ignore-scripts --no-audit --no-fund && npx patch-package --error-on-fail
COPY . .
ARG POLLER_ENTRY=bin/poller.ts
RUN npx tsx tools/build/build-poller.ts "$POLLER_ENTRY" /out

# ── runtime: the bundle and Node.js, nothing else ─────────────────────────────────────────────────────────────
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
# Owned by root and read-only to the process: the task also runs with a read-only root file system.
COPY --from=build /out/ /app/
USER node
# ECS stops a task with SIGTERM, then SIGKILL after the container's stopTimeout (POLLER_STOP_TIMEOUT_SECONDS +
# 10 s): the poller drains in between. node runs as PID 1 and handles the signal itself (no shell in between).
STOPSIGNAL SIGTERM
CMD ["node", "poller.mjs"]
