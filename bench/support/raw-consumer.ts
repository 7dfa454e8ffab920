// The e2e bench's raw consumer, run as its own process like the thread worker: consumes an
// existing durable with an explicit ack for each message. Prints "ready" once it is pulling and
// "done <n>" once it has acked (and flushed) RAW_COUNT messages, then waits for SIGTERM.
// Environment: NATS_URL, RAW_STREAM, RAW_DURABLE, RAW_COUNT.
import { jetstream } from "@nats-io/jetstream";
import { connectNats } from "../../services/nats/connect.ts";

const url = process.env.NATS_URL;
const stream = process.env.RAW_STREAM ?? "RAW";
const durable = process.env.RAW_DURABLE ?? "raw";
const count = Number(process.env.RAW_COUNT);
if (!url || !Number.isInteger(count) || count < 1) {
  console.error("raw-consumer: set NATS_URL and RAW_COUNT (a whole number ≥ 1)");
  process.exit(2);
}

const nc = await connectNats({ url, name: "bench-e2e-raw-consumer" });
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
for await (const m of messages) {
  m.ack();
  if (++n === count) break;
}
await nc.flush();
console.log(`done ${n}`);
