import {
  PermissionViolationError,
  type NatsConnection,
  type Status,
} from "@nats-io/transport-node";
import type { NatsAuth } from "../config/nats-auth.ts";
import { actionOn, userOf } from "../nats/permission-violations.ts";

/**
 * The server refused something a command needs for the NATS user it runs as. Its message says
 * which user may not do what (and the server's words); `outline` adds who may (commands.ts).
 */
export class PermissionDenied extends Error {
  override readonly name = "PermissionDenied";
  readonly subject: string;
  constructor(refusal: PermissionViolationError, auth: NatsAuth, more = "") {
    super(`${userOf(auth)} may not ${actionOn(refusal)} (${refusal.message})${more}`, {
      cause: refusal,
    });
    this.subject = refusal.subject;
  }
}

/** The messages of `err` and of the errors it was made from. */
function messages(err: unknown): string {
  const all: string[] = [];
  for (let e = err; e instanceof Error; e = e.cause) all.push(e.message);
  return all.join("\n");
}

/** Whether `err`, or an error it was made from, is the server's permissions violation. */
export function mentionsRefusal(err: unknown): boolean {
  return /permissions violation/i.test(messages(err));
}

/** The server's refusals on one connection, in order. */
export interface Refusals {
  /** How many were seen so far: a mark to ask `since` about later. */
  readonly count: number;
  /** The first refusal after `mark`, once the server has answered everything sent before. */
  since(mark: number): Promise<PermissionViolationError | undefined>;
  /** The refusal `err` tells of: the one whose subject it names, else the latest. */
  behind(err: unknown): Promise<PermissionViolationError | undefined>;
}

/**
 * Watches `nc` for refusals. The server says one as an error on the connection, not as an
 * answer to what it refused: a round trip (`flush`) makes sure those of earlier requests are in.
 */
export function watchRefusals(nc: NatsConnection): Refusals {
  const seen: PermissionViolationError[] = [];
  const status: AsyncIterable<Status> = nc.status();
  void (async () => {
    for await (const s of status) {
      if (s.type === "error" && s.error instanceof PermissionViolationError) seen.push(s.error);
    }
  })();
  return {
    get count() {
      return seen.length;
    },
    async since(mark) {
      await nc.flush().catch(() => undefined);
      return seen[mark];
    },
    async behind(err) {
      await nc.flush().catch(() => undefined);
      const text = messages(err);
      return seen.find((r) => text.includes(r.subject)) ?? seen.at(-1);
    },
  };
}
