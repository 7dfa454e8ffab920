import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadSettings, type Config } from "../config/load.ts";
import { connectNats, NatsConnectError, redactUrl } from "../nats/connect.ts";
import { withServerPartitions } from "../nats/partition-probe.ts";
import { isTransient } from "../nats/transient.ts";
import { ENABLE_JETSTREAM, isJetStreamOff } from "../nats/jetstream-off.ts";
import { ApiError } from "../api/api-error.ts";
import { createOperations } from "../prompt-builder/operations.ts";
import { createReader, type ThreadReader } from "../nats/reader.ts";
import {
  describeNatsUrlSource as sourceOf,
  natsUrlSource,
  type NatsUrlSource,
} from "../config/nats-url.ts";
import type { OutlineClient } from "../client/client.ts";
import { UsageError } from "./args.ts";
import { promptBuilderClient } from "./ask.ts";
import { mentionsRefusal, PermissionDenied, watchRefusals, type Refusals } from "./permissions.ts";

/** What a command talks to: the same settings and NATS_URL as the services. */
export interface Session {
  config: Config;
  nc: NatsConnection;
  js: JetStreamClient;
  reader: ThreadReader;
  /**
   * Zoom and outline read the streams and the bucket directly: no setting enters them, so they
   * answer as the prompt-builder would, and work while none runs. A user the server refuses
   * those reads (the platform user) gets the running prompt-builder's answer instead. A prompt
   * depends on the service's settings (HISTORY_SEARCH, the tail's cap): `outline prompt` asks
   * the service.
   */
  operations: Pick<OutlineClient, "zoom" | "outline">;
  /** The running prompt-builder (and search service) over NATS, through the typed client. */
  client: OutlineClient;
  /**
   * `read`, or when the server refuses this user a read it makes, the running prompt-builder's
   * answer through `ask` (on `<apiPrefix>.<op>`); a PermissionDenied when none runs to ask.
   */
  orAsk: <T>(
    read: () => Promise<T>,
    op: AskedOp,
    ask: (client: OutlineClient) => Promise<T>,
  ) => Promise<T>;
  /** Throws NotOurServer when the server has no CHAT stream (import checks before reading). */
  requireChatStream: () => Promise<void>;
  /** The server asked, in words: its URL and where that came from. */
  asked: string;
}

/** What a command reads itself, or asks a prompt-builder for when refused the read. */
type AskedOp = "zoom" | "outline" | "cluster";

/**
 * The server answered but has no CHAT stream (another project's server, or ours never started),
 * or no JetStream at all.
 */
export class NotOurServer extends Error {
  override readonly name = "NotOurServer";
}

/** NotOurServer when `err`, of a stream info of `stream`, says the server has no such stream. */
function notOurServer(
  err: unknown,
  stream: string,
  source: NatsUrlSource,
): NotOurServer | undefined {
  // Without JetStream there are no streams at all: that, not a missing CHAT, is what to fix.
  if (isJetStreamOff(err)) {
    return new NotOurServer(
      `the nats-server at ${redactUrl(source.url)} (${sourceOf(source)}) has JetStream off: ${ENABLE_JETSTREAM}; or set NATS_URL to a server with JetStream`,
      { cause: err },
    );
  }
  if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound))
    return undefined;
  return new NotOurServer(
    `the nats-server at ${redactUrl(source.url)} (${sourceOf(source)}) answered, but has no stream ${stream} (OUTLINE_CHAT_STREAM): is it the right server? 'npm start' creates the streams (or set NATS_URL to the server it uses)`,
    { cause: err },
  );
}

/** Asks the server for stream `stream`: NotOurServer when it has none, else what it threw. */
async function streamInfo(
  nc: NatsConnection,
  stream: string,
  source: NatsUrlSource,
): Promise<void> {
  try {
    await (await jetstreamManager(nc)).streams.info(stream);
  } catch (err) {
    throw notOurServer(err, stream, source) ?? err;
  }
}

/**
 * `read` as this user; when the server refuses it a read (the platform user of
 * nats/nats-server.conf may not read CHAT, HISTORY or the cluster bucket), the running
 * prompt-builder's answer on `<apiPrefix>.<op>` instead: the same JSON, read with its rights.
 */
function orAskWith(client: OutlineClient, config: Config, refusals: Refusals): Session["orAsk"] {
  return async function orAsk<T>(
    read: () => Promise<T>,
    op: AskedOp,
    ask: (client: OutlineClient) => Promise<T>,
  ): Promise<T> {
    const mark = refusals.count;
    try {
      return await read();
    } catch (err) {
      const refusal = mentionsRefusal(err) ? await refusals.since(mark) : undefined;
      if (!refusal) throw err;
      const subject = `${config.names.apiPrefix}.${op}`;
      return ask(client).catch((e: unknown) => {
        if (e instanceof ApiError && e.code === "PROMPT_BUILDER_UNAVAILABLE") {
          throw new PermissionDenied(
            refusal,
            config.auth,
            `, and no prompt-builder answers on ${subject} to ask instead`,
          );
        }
        throw e;
      });
    }
  };
}

/** Connects for one command and closes afterwards, whatever the command did. */
export async function withSession<T>(use: (session: Session) => Promise<T>): Promise<T> {
  const config = loadSettings();
  for (const warning of config.warnings) process.stderr.write(`outline: warning: ${warning}\n`);
  const source = natsUrlSource(config);
  const { url, from } = source;
  const asked = `${redactUrl(url)} (${sourceOf(source)})`;
  // A server that did not answer in time is named (unless the error does), and from the default
  // any failure: it may just mean another server answered on the default port.
  const named = (err: unknown): never => {
    const unnamed = !(err instanceof NotOurServer) && !(err instanceof NatsConnectError);
    if (unnamed && (from === "default" || isTransient(err)))
      process.stderr.write(`outline: asked the nats-server at ${asked}\n`);
    throw err;
  };
  const nc = await connectNats({
    url,
    name: "outline-cli",
    auth: config.auth,
    from,
    // A person is waiting: fail fast with the reason rather than retry for long.
    startupTimeoutMs: 3_000,
  }).catch(named);
  const stream = config.names.chatStream;
  // A command that failed on a server without our streams says so, not how its read failed
  // ("stream not found" of a bucket): one more request, made only after a failure.
  const notOurs = async (err: unknown): Promise<never> => {
    const wrong =
      err instanceof UsageError ||
      err instanceof NotOurServer ||
      err instanceof PermissionDenied ||
      (err instanceof ApiError && err.status === 400)
        ? undefined
        : await streamInfo(nc, stream, source).then(
            () => undefined,
            (e: unknown) => (e instanceof NotOurServer ? e : undefined),
          );
    throw wrong ?? err;
  };
  // Before the refusals are watched: a user the server refuses the probe is no command's refusal.
  const found = await withServerPartitions(nc, config.names).catch(async (err: unknown) => {
    await nc.close();
    return named(err);
  });
  config.names = found.names;
  const refusals = watchRefusals(nc);
  // A command the server refused for this user says so, not how its read failed after.
  const refused = async (err: unknown): Promise<never> => {
    if (!(err instanceof PermissionDenied) && mentionsRefusal(err)) {
      const refusal = await refusals.behind(err);
      if (refusal) throw new PermissionDenied(refusal, config.auth);
    }
    throw err;
  };
  try {
    const reader = createReader(nc, config.names);
    const operations = createOperations(reader);
    const client = promptBuilderClient(nc, config.names.apiPrefix);
    const orAsk = orAskWith(client, config, refusals);
    return await use({
      config,
      nc,
      js: jetstream(nc),
      reader,
      operations: {
        zoom: (request) =>
          orAsk(
            () => operations.zoom({ ...request }),
            "zoom",
            (c) => c.zoom(request),
          ),
        outline: (request) =>
          orAsk(
            () => operations.outline({ ...request }),
            "outline",
            (c) => c.outline(request),
          ),
      },
      client,
      orAsk,
      requireChatStream: () => streamInfo(nc, stream, source),
      asked,
    })
      .catch(refused)
      .catch(notOurs)
      .catch(named);
  } finally {
    await nc.close();
  }
}
