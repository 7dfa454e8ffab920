import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KvEntry } from "@nats-io/kv";
import {
  createInbox,
  headers,
  type Msg,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";

/** The KV operations the thread worker writes with (a nats.js `KV` has them too). */
export interface KvWrites {
  create(key: string, value: Uint8Array): Promise<number>;
  update(key: string, value: Uint8Array, revision: number): Promise<number>;
  put(key: string, value: Uint8Array): Promise<number>;
  get(key: string): Promise<KvEntry | null>;
}

/** The part of a nats.js `KV` a FastKv falls back on. */
type KvBase = Pick<KvWrites, "create" | "put" | "get">;

interface Waiter {
  resolve: (revision: number) => void;
  reject: (err: Error) => void;
  deadline: number;
}

const decoder = new TextDecoder();
const EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence";

/**
 * Conditional JetStream publishes (a KV create or update) answered on one wildcard inbox of its
 * own. nats.js's request path builds a timer, a subscription entry and, on every success, an
 * Error with a stack trace that nobody sees ("cancelled", to settle a promise already settled):
 * with a few requests per chat event that was a tenth of the worker's CPU. Here a request is one
 * publish and a map entry; one sweep per 250 ms fails those unanswered past the timeout. Errors
 * are the ones nats.js throws for the same answers (JetStreamApiError with the server's code).
 */
export class KvWriter {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #sub: Subscription;
  readonly #waiting = new Map<string, Waiter>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #timeoutMs: number;
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
  }

  /**
   * Publishes `value` on `subject` if the subject's last stored sequence is `expected` (0: the
   * subject has none); resolves with the stored sequence (the KV revision).
   */
  write(subject: string, value: Uint8Array, expected: number | undefined): Promise<number> {
    if (this.#closed) return Promise.reject(new Error("KV writer closed: the worker is stopping"));
    const token = (this.#next++).toString(36);
    const reply = this.#prefix + token;
    return new Promise<number>((resolve, reject) => {
      this.#waiting.set(token, { resolve, reject, deadline: Date.now() + this.#timeoutMs });
      try {
        if (expected === undefined) {
          this.#nc.publish(subject, value, { reply });
        } else {
          const h = headers();
          h.set(EXPECTED_LAST_SUBJECT_SEQ, String(expected));
          this.#nc.publish(subject, value, { reply, headers: h });
        }
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
    if (msg.headers?.hasError) {
      waiter.reject(
        new Error(
          `JetStream did not store the write (${msg.headers.code} ${msg.headers.description}): no stream answered for ${msg.subject}`,
        ),
      );
      return;
    }
    try {
      const answer = JSON.parse(decoder.decode(msg.data)) as {
        seq?: number;
        error?: { code: number; err_code: number; description: string };
      };
      if (answer.error) waiter.reject(new JetStreamApiError(answer.error));
      else if (typeof answer.seq === "number") waiter.resolve(answer.seq);
      else waiter.reject(new Error(`JetStream answered a write without a sequence`));
    } catch (err) {
      waiter.reject(err as Error);
    }
  }

  #expire(now: number): void {
    for (const [token, waiter] of this.#waiting) {
      if (waiter.deadline > now) continue;
      this.#waiting.delete(token);
      waiter.reject(new Error(`JetStream did not answer a write within ${this.#timeoutMs} ms`));
    }
  }

  /** Fails what is still waiting and stops listening. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.#expire(Number.POSITIVE_INFINITY);
    this.#sub.unsubscribe();
  }
}

function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
      err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * One bucket's writes through a KvWriter, with nats.js's semantics: `create` over a key whose
 * last entry is a delete marker succeeds (it retries through nats.js's `create`, which handles
 * that case), `update` is fenced on the revision. Reads go to the nats.js bucket.
 */
export class FastKv implements KvWrites {
  readonly #writer: KvWriter;
  readonly #kv: KvBase;
  readonly #subjectPrefix: string;

  constructor(writer: KvWriter, kv: KvBase, bucket: string) {
    this.#writer = writer;
    this.#kv = kv;
    this.#subjectPrefix = `$KV.${bucket}.`;
  }

  async create(key: string, value: Uint8Array): Promise<number> {
    try {
      return await this.#writer.write(this.#subjectPrefix + key, value, 0);
    } catch (err) {
      if (!isWrongLastSequence(err)) throw err;
    }
    return this.#kv.create(key, value);
  }

  update(key: string, value: Uint8Array, revision: number): Promise<number> {
    return this.#writer.write(this.#subjectPrefix + key, value, revision);
  }

  put(key: string, value: Uint8Array): Promise<number> {
    return this.#writer.write(this.#subjectPrefix + key, value, undefined);
  }

  get(key: string): Promise<KvEntry | null> {
    return this.#kv.get(key);
  }
}
