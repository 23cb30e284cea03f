# podyard's image (docs/production.md, "Container image"). The build context is the directory
# deploy/build-image.sh stages: the compiled server (bin/, dist/) and its production
# node_modules, installed on a machine like the base image (Debian 12, glibc, the same
# architecture: better-sqlite3 is a native module), so the build needs no registry.
#   deploy/build-image.sh                      # FROM node:20-bookworm-slim
#   BASE_IMAGE=podyard-base:bookworm deploy/build-image.sh   # FROM a base made here
ARG BASE_IMAGE=node:20-bookworm-slim
FROM ${BASE_IMAGE}

WORKDIR /opt/podyard
COPY package.json package-lock.json ./
COPY bin ./bin
COPY dist ./dist
COPY node_modules ./node_modules

# Listen on every interface of the container; state in the volume. The demo fleet's process
# driver needs bubblewrap to isolate accounts: in a container, point the server at a Docker
# engine instead (PODYARD_DRIVER=docker with the engine's socket mounted, docs/runtime.md).
ENV NODE_ENV=production \
    PODYARD_HOST=0.0.0.0 \
    PODYARD_PORT=8080 \
    PODYARD_DATA_DIR=/var/lib/podyard \
    PODYARD_LOG_FORMAT=json
VOLUME /var/lib/podyard
EXPOSE 8080
# /metrics on 8080 takes the admin's key. PODYARD_METRICS_LISTEN=0.0.0.0:9464 serves it without
# one on a port of its own: publish that port only to Prometheus's network (docs/production.md).

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PODYARD_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# SIGTERM: podyard closes its streams and long polls and exits within a few seconds.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/opt/podyard/bin/podyard.js"]
CMD ["serve"]
