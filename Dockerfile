# One image for every outline service; SERVICE picks which one runs:
#   docker build -t outline .
#   docker run -e SERVICE=prompt-builder -e NATS_URL=nats://host:4222 -p 8080:8080 -e HOST=0.0.0.0 outline
# or name the entry file as the command:
#   docker run outline node --import tsx services/thread-worker/main.ts
FROM node:20-slim

WORKDIR /app
ENV NODE_ENV=production

# Dependencies first, so a code change does not reinstall them. tsx is a runtime dependency:
# the services run from their TypeScript sources, the same files the tests run.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY shared ./shared
COPY machines ./machines
COPY services ./services

USER node
ENV SERVICE=thread-worker
# exec: node gets SIGTERM from `docker stop` directly and drains (compose adds an init as PID 1).
CMD ["sh", "-c", "entry=\"services/$SERVICE/main.ts\"; if [ ! -f \"$entry\" ]; then echo \"outline: SERVICE=$SERVICE has no $entry; use SERVICE=thread-worker or SERVICE=prompt-builder\" >&2; exit 64; fi; exec node --import tsx \"$entry\""]
