import { createInbox, headers, type Msg, type NatsConnection } from "@nats-io/transport-node";

/** JetStream's answer to one publish. */
export interface Stored {
  stream: string;
  seq: number;
  /** Its Nats-Msg-Id was stored within the duplicate window: not stored again. */
  duplicate: boolean;
}

export interface PipelinedPublisher {
  /** Publishes with this Nats-Msg-Id; resolves with the stream's acknowledgement. */
  publish(subject: string, data: Uint8Array, msgId: string): Promise<Stored>;
  close(): void;
}

/**
 * JetStream publishes for bulk work: each a core publish whose reply goes to one subscription of
 * ours, so many are in flight with no timer or inbox each: about twice `jetstream().publish`'s
 * rate, a request with its own timeout per message (bench cli). A publish unanswered after
 * `timeoutMs` fails.
 */
export function pipelinedPublisher(
  nc: NatsConnection,
  options: { timeoutMs?: number } = {},
): PipelinedPublisher {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const prefix = createInbox();
  const pending = new Map<number, { at: number; settle: (r: Stored | Error) => void }>();
  let next = 0;
  const answer = (msg: Msg): Stored | Error => {
    if (msg.headers?.code === 503) return new Error("no stream takes this subject (no responders)");
    try {
      const body = msg.json<{
        stream?: string;
        seq?: number;
        duplicate?: boolean;
        error?: { description?: string };
      }>();
      if (body.error) return new Error(body.error.description ?? "JetStream refused it");
      return { stream: body.stream ?? "", seq: body.seq ?? 0, duplicate: body.duplicate === true };
    } catch (err) {
      return new Error(`unreadable acknowledgement: ${(err as Error).message}`);
    }
  };
  const sub = nc.subscribe(`${prefix}.*`, {
    callback: (_err, msg) => {
      const id = Number(msg.subject.slice(prefix.length + 1));
      const waiting = pending.get(id);
      if (!waiting) return;
      pending.delete(id);
      waiting.settle(answer(msg));
    },
  });
  const timer = setInterval(() => {
    const now = Date.now();
    for (const [id, waiting] of pending) {
      if (now - waiting.at < timeoutMs) break; // in publish order: the rest are younger
      pending.delete(id);
      waiting.settle(new Error(`no acknowledgement within ${timeoutMs} ms`));
    }
  }, 250);
  timer.unref();
  return {
    publish(subject, data, msgId) {
      return new Promise<Stored>((resolve, reject) => {
        const id = next++;
        pending.set(id, {
          at: Date.now(),
          settle: (r) => (r instanceof Error ? reject(r) : resolve(r)),
        });
        const h = headers();
        h.set("Nats-Msg-Id", msgId);
        try {
          nc.publish(subject, data, { reply: `${prefix}.${id}`, headers: h });
        } catch (err) {
          pending.delete(id);
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    },
    close() {
      clearInterval(timer);
      sub.unsubscribe();
      for (const waiting of pending.values()) waiting.settle(new Error("closed"));
      pending.clear();
    },
  };
}
