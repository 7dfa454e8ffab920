import {
  PermissionViolationError,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import type { NatsAuth } from "../config/nats-auth.ts";

/** The user a service or command connects as, in words. */
export function userOf(auth: NatsAuth): string {
  switch (auth.kind) {
    case "user":
      return `NATS user '${auth.user}'`;
    case "token":
      return "the NATS user of NATS_TOKEN";
    case "creds":
      return `the NATS user of ${auth.file} (NATS_CREDS)`;
    case "none":
      return "the NATS user of this connection (NATS_USER unset: the server's default)";
  }
}

// JetStream's API names the stream after the verb: reads and changes of a stream.
const READS =
  /^\$JS\.API\.(?:STREAM\.INFO|STREAM\.MSG\.GET|DIRECT\.GET|CONSUMER\.(?:CREATE|DURABLE\.CREATE|INFO|MSG\.NEXT|DELETE))\.([^.]+)/;
const CHANGES = /^\$JS\.API\.STREAM\.(?:CREATE|UPDATE|PURGE|DELETE|MSG\.DELETE)\.([^.]+)/;

/** What a refused subject means: "read stream DEAD", "publish to chat.t.message.created". */
export function actionOn(refusal: Pick<PermissionViolationError, "operation" | "subject">): string {
  const { operation, subject } = refusal;
  if (operation === "subscription") return `subscribe to ${subject}`;
  const read = READS.exec(subject);
  if (read) return `read stream ${read[1]}`;
  const change = CHANGES.exec(subject);
  if (change) return `change stream ${change[1]}`;
  return `publish to ${subject}`;
}

/** The server refused a subscription a service serves on: it cannot do its job. */
export class SubscriptionRefused extends Error {
  override readonly name = "SubscriptionRefused";
  readonly subject: string;
  constructor(message: string, refusal: PermissionViolationError) {
    super(message, { cause: refusal });
    this.subject = refusal.subject;
  }
}

function refusedSubscription(
  err: PermissionViolationError,
  auth: NatsAuth,
  fix: string,
): SubscriptionRefused {
  return new SubscriptionRefused(
    `${userOf(auth)} may not ${actionOn(err)} (${err.message}): ${fix}`,
    err,
  );
}

/**
 * Resolves once the server has taken `subs`, or throws SubscriptionRefused for the first it
 * refused: `<user> may not subscribe to <subject> (<the server's words>): <fix>`. The server
 * says a refusal as an error on the connection, so one round trip (flush) brings them all in.
 */
export async function confirmSubscriptions(
  nc: NatsConnection,
  subs: readonly Subscription[],
  auth: NatsAuth,
  fix: string,
): Promise<void> {
  await nc.flush();
  for (const sub of subs) {
    if (!sub.isClosed()) continue;
    const err = await sub.closed;
    if (!(err instanceof PermissionViolationError)) continue;
    throw refusedSubscription(err, auth, fix);
  }
}

/**
 * Calls `onRefused` when the server drops one of `subs` later (a reloaded config that no longer
 * allows it): the service stops answering there, which it must not do quietly.
 */
export function watchSubscriptions(
  subs: readonly Subscription[],
  auth: NatsAuth,
  fix: string,
  onRefused: (err: SubscriptionRefused) => void,
): void {
  for (const sub of subs) {
    void sub.closed.then((err) => {
      if (err instanceof PermissionViolationError) onRefused(refusedSubscription(err, auth, fix));
    });
  }
}
