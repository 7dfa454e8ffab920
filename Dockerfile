# One image for every outline service; SERVICE picks which one runs:
#   docker build -t outline .
#   docker run -e SERVICE=prompt-builder -e NATS_URL=nats://host:4222 -p 8080:8080 -e HOST=0.0.0.0 outline
# or name the entry file as the command:
#   docker run outline node --import tsx services/thread-worker/main.ts
# Dependencies are installed in a stage with a C++ toolchain: better-sqlite3 (the search index)
# is a native addon, compiled when no prebuilt binary can be fetched for this Node. The runtime
# stage takes the installed node_modules only.
FROM node:20-slim AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-slim

WORKDIR /app
ENV NODE_ENV=production

# Dependencies first, so a code change does not reinstall them. tsx is a runtime dependency:
# the services run from their TypeScript sources, the same files the tests run.
COPY package.json package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
# The search service's index (OUTLINE_SEARCH_DB, default .data/search.db): a volume mounted here
# keeps it across container restarts, owned by the user the services run as.
RUN mkdir -p /app/.data && chown node:node /app/.data

COPY tsconfig.json ./
COPY shared ./shared
COPY machines ./machines
COPY services ./services

USER node
ENV SERVICE=thread-worker
# exec: node gets SIGTERM from `docker stop` directly and drains (compose adds an init as PID 1).
CMD ["sh", "-c", "entry=\"services/$SERVICE/main.ts\"; if [ ! -f \"$entry\" ]; then echo \"outline: SERVICE=$SERVICE has no $entry; use SERVICE=thread-worker, SERVICE=prompt-builder or SERVICE=search\" >&2; exit 64; fi; exec node --import tsx \"$entry\""]
