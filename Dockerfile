# One image for every outline service; SERVICE picks which one runs:
#   docker build -t outline .
#   docker run -e SERVICE=prompt-builder -e NATS_URL=nats://host:4222 -p 8080:8080 \
#     -e HOST=0.0.0.0 -e OUTLINE_API_TOKEN=<secret> outline
# or name the compiled entry as the command:
#   docker run outline node dist/thread-worker.js
# The services run as compiled JavaScript (services/build/build.js) on Node 24 LTS, the line
# package.json's `engines` and its `node` dependency name.

# Production dependencies: no native addon (the search index is node:sqlite). Scripts are skipped:
# npm's `prepare` builds the sources, which are not copied yet, and the image's own Node runs
# everything, so the `node` package's download of the same runtime is not needed.
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force

# The compiled services: dist/<service>.js and the chunks they share (esbuild is a dependency).
FROM deps AS build
COPY tsconfig.json ./
COPY shared ./shared
COPY machines ./machines
COPY services ./services
RUN node services/build/build.js

FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The explorer's page is bundled from its sources on the first /ui/ request.
COPY services/explorer/ui ./services/explorer/ui
# The search service's index (OUTLINE_SEARCH_DB, default .data/search.db): a volume mounted here
# keeps it across container restarts, owned by the user the services run as.
RUN mkdir -p /app/.data && chown node:node /app/.data

USER node
ENV SERVICE=thread-worker
# exec: node gets SIGTERM from `docker stop` directly and drains (compose adds an init as PID 1).
CMD ["sh", "-c", "entry=\"dist/$SERVICE.js\"; case \"$SERVICE\" in thread-worker|prompt-builder|search) ;; *) echo \"outline: SERVICE=$SERVICE is not a service; use SERVICE=thread-worker, SERVICE=prompt-builder or SERVICE=search\" >&2; exit 64;; esac; exec node \"$entry\""]
