// The e2e bench's raw consumer, run as its own process like the thread worker: consumes an
// existing durable with an explicit ack for each message. Prints "ready" once it is pulling and
// "done <n>" once it has acked (and flushed) RAW_COUNT messages, then waits for SIGTERM.
// Environment: NATS_URL, RAW_STREAM, RAW_DURABLE, RAW_COUNT; RAW_WARM=<w>: w messages are acked
// first, not counted, then "warm" is printed (e2e's warm-up; not with RAW_WRITES); RAW_WRITES=<k> (the floor, e2e
// BENCH_E2E_FLOOR): before each ack, k fenced JetStream writes of RAW_WRITE_BYTES on subjects
// of their own under RAW_WRITE_PREFIX, through the worker's own writer, as the worker's id claim
// and HISTORY nodes are written: what the writes alone cost, without the worker's other work.
import { jetstream } from "@nats-io/jetstream";
import { coalesceWrites } from "../../services/nats/coalesced-writes.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { InboxRequests } from "../../services/nats/inbox-requests.ts";
import { KvWriter } from "../../services/nats/kv-writer.ts";

const url = process.env.NATS_URL;
const stream = process.env.RAW_STREAM ?? "RAW";
const durable = process.env.RAW_DURABLE ?? "raw";
const count = Number(process.env.RAW_COUNT);
// Acked first and not counted: "warm" is printed after them (the e2e bench's warm-up).
const warm = Number(process.env.RAW_WARM ?? 0);
const writes = Number(process.env.RAW_WRITES ?? 0);
const writePrefix = process.env.RAW_WRITE_PREFIX ?? "floor";
const payload = new Uint8Array(Number(process.env.RAW_WRITE_BYTES ?? 500)).fill(120);
if (!url || !Number.isInteger(count) || count < 1) {
  console.error("raw-consumer: set NATS_URL and RAW_COUNT (a whole number ≥ 1)");
  process.exit(2);
}

const nc = await connectNats({ url, name: "bench-e2e-raw-consumer" });
// As the worker's connection: one socket write per turn, requests on an inbox of its own.
if (writes > 0) coalesceWrites(nc);
const writer = writes > 0 ? new KvWriter(new InboxRequests(nc)) : undefined;
const consumer = await jetstream(nc).consumers.get(stream, durable);
const messages = await consumer.consume({ max_messages: 1_000 });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void messages.close().finally(() => nc.close().finally(() => process.exit(0)));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
await nc.flush();
console.log("ready");

let n = 0;
let warming = warm;
if (warming === 0) console.log("warm");
if (!writer) {
  for await (const m of messages) {
    m.ack();
    // One loop: leaving a `for await` ends the consume's iterator.
    if (warming > 0) {
      if (--warming === 0) await nc.flush().then(() => console.log("warm"));
      continue;
    }
    if (++n === count) break;
  }
} else {
  // Each message's writes go out at once and its ack when they are stored (as the worker acks
  // only what is durable); messages are not waited for one by one.
  const acked: Promise<void>[] = [];
  for await (const m of messages) {
    const i = n;
    const stored = Array.from({ length: writes }, (_, k) =>
      writer.publish(`${writePrefix}.${i}.${k}`, payload, { expected: 0, msgId: `${i}:${k}` }),
    );
    acked.push(Promise.all(stored).then(() => m.ack()));
    if (++n === count) break;
  }
  await Promise.all(acked);
}
await nc.flush();
console.log(`done ${n}`);
