import {
  createInbox,
  PermissionViolationError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Status,
  type Subscription,
} from "@nats-io/transport-node";

/** Reads an answer: the request's result, or throws what is wrong with it. */
export type ReadAnswer<T> = (msg: Msg, subject: string) => T;

interface Waiter {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  read: ReadAnswer<unknown>;
  deadline: number;
  /** What was asked and of which subject, for the errors ("a write to <subject>"). */
  what: string;
  subject: string;
}

/**
 * Requests answered on one wildcard inbox of its own. nats.js's request path builds a timer, a
 * subscription entry and, on every success, an Error with a stack trace that nobody sees
 * ("cancelled", to settle a promise already settled): with a few requests per chat event or
 * summary node that was a tenth of the worker's CPU. Here a request is one publish and a map
 * entry; one sweep per 250 ms fails those unanswered past the timeout. The caller reads the
 * answer (KvWriter, DirectReader); the worker's share one inbox, the prompt-builder's reader has its own.
 */
export class InboxRequests {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #sub: Subscription;
  readonly #waiting = new Map<string, Waiter>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #timeoutMs: number;
  readonly #status: AsyncIterable<Status> & { stop?: () => void };
  #next = 0;
  #closed = false;

  constructor(nc: NatsConnection, timeoutMs = 5_000) {
    this.#nc = nc;
    this.#timeoutMs = timeoutMs;
    this.#prefix = `${createInbox()}.`;
    this.#sub = nc.subscribe(`${this.#prefix}*`, {
      callback: (err, msg) => {
        if (!err) this.#answer(msg);
      },
    });
    this.#sweeper = setInterval(() => this.#expire(Date.now()), 250);
    this.#sweeper.unref();
    // The server refuses a publish it does not permit with an error on the connection, not an
    // answer: without this the request would wait out its timeout as if JetStream were slow.
    const status = nc.status();
    this.#status = status;
    void (async () => {
      for await (const s of status) {
        if (s.type === "error" && s.error instanceof PermissionViolationError)
          this.#refused(s.error);
      }
    })();
  }

  /**
   * Publishes `data` (with `headers`) on `subject` with a reply inbox of ours; resolves with
   * what `read` makes of the answer, read as it arrives (one promise per request: the worker
   * makes a few per chat event). `what` names the request in errors ("a write to" the subject).
   */
  request<T>(
    subject: string,
    data: Uint8Array | string,
    headers: MsgHdrs | undefined,
    what: string,
    read: ReadAnswer<T>,
  ): Promise<T> {
    if (this.#closed) {
      return Promise.reject(
        new Error(`cannot send ${what} ${subject}: its inbox is closed (the service is stopping)`),
      );
    }
    const token = (this.#next++).toString(36);
    const reply = this.#prefix + token;
    return new Promise<T>((resolve, reject) => {
      this.#waiting.set(token, {
        resolve: resolve as (value: unknown) => void,
        reject,
        read,
        deadline: Date.now() + this.#timeoutMs,
        what,
        subject,
      });
      try {
        this.#nc.publish(subject, data, headers ? { reply, headers } : { reply });
      } catch (err) {
        this.#waiting.delete(token);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  #answer(msg: Msg): void {
    const token = msg.subject.slice(this.#prefix.length);
    const waiter = this.#waiting.get(token);
    if (!waiter) return; // timed out already
    this.#waiting.delete(token);
    try {
      waiter.resolve(waiter.read(msg, waiter.subject));
    } catch (err) {
      waiter.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  #refused(err: PermissionViolationError): void {
    if (err.operation !== "publish") return;
    for (const [token, waiter] of this.#waiting) {
      if (waiter.subject !== err.subject) continue;
      this.#waiting.delete(token);
      waiter.reject(
        new Error(`the server refused ${waiter.what} ${waiter.subject}: ${err.message}`, {
          cause: err,
        }),
      );
    }
  }

  #expire(now: number, closing = false): void {
    for (const [token, waiter] of this.#waiting) {
      if (waiter.deadline > now) continue;
      this.#waiting.delete(token);
      waiter.reject(
        new Error(
          closing
            ? `no answer to ${waiter.what} ${waiter.subject} before the service stopped`
            : `JetStream did not answer ${waiter.what} ${waiter.subject} within ${this.#timeoutMs} ms`,
        ),
      );
    }
  }

  /** Fails what is still waiting and stops listening. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.#expire(Number.POSITIVE_INFINITY, true);
    this.#sub.unsubscribe();
    this.#status.stop?.();
  }
}
