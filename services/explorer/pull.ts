import { createInbox, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";

/** A message a pull brought: where it is stored, when, and its headers (bodies may be left out). */
export interface Pulled {
  subject: string;
  seq: number;
  /** When it was stored (epoch ms). */
  at: number;
  /** Its headers, parsed when asked for (a scan skips most messages by subject alone). */
  headers(): MsgHdrs | undefined;
}

/** Longest a pull of messages already stored may take before it is given up. */
const PULL_TIMEOUT_MS = 5_000;

/**
 * One pull of up to `batch` messages from a consumer, what is stored now only (`no_wait`), on an
 * inbox of its own: one request, where nats.js's consumer first asks the consumer's info and
 * wraps each message. `onMessage` returning false ends it early. Resolves once the batch came,
 * the server said there is no more, or onMessage stopped it.
 */
export function pull(
  nc: NatsConnection,
  stream: string,
  consumer: string,
  batch: number,
  onMessage: (m: Pulled) => boolean,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const inbox = createInbox();
    let got = 0;
    const finish = (err?: Error) => {
      clearTimeout(timer);
      sub.unsubscribe();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(
      () => finish(new Error(`a pull of ${batch} from ${stream} took over ${PULL_TIMEOUT_MS} ms`)),
      PULL_TIMEOUT_MS,
    );
    const sub = nc.subscribe(inbox, {
      callback: (err, msg) => {
        if (err) return finish(err);
        if (!msg.reply) {
          // A status: 404 (no more), 408 (expired) end the pull; others are errors.
          const code = msg.headers?.code ?? 0;
          if (code === 100) return;
          if (code === 404 || code === 408 || code === 409) return finish();
          return finish(
            new Error(`pull from ${stream}: ${code} ${msg.headers?.description ?? ""}`),
          );
        }
        // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ns>.<pending>[...]: the
        // newer form adds domain and account hash before the stream.
        const tokens = msg.reply.split(".");
        const base = tokens.length >= 12 ? 4 : 2;
        const seq = Number(tokens[base + 3]);
        const at = Number(tokens[base + 5]) / 1e6;
        got += 1;
        const more = onMessage({ subject: msg.subject, seq, at, headers: () => msg.headers });
        if (!more || got >= batch) finish();
      },
    });
    nc.publish(
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
      JSON.stringify({ batch, no_wait: true }),
      { reply: inbox },
    );
  });
}
