// The worker's writes for bench prompt's real turns, on a thread and a NATS connection of their
// own (bench/support/applier.ts starts it): a real worker is another process, and a 150 KB
// snapshot put on the prompt-builder's own event loop (a loopback write runs the receiver's TCP
// work in the sender's call) would be charged to the turn it races.
import { parentPort, workerData } from "node:worker_threads";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { InfraNames } from "../../services/config/names.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureWorkerBuckets } from "../../services/nats/buckets.ts";
import { claimMessageId } from "../../services/nats/id-index.ts";
import type { ApplyJob } from "./applier.ts";

const { url, names } = workerData as { url: string; names: InfraNames };
const nc = await connectNats({ url, name: "bench-prompt-worker" });
const js = jetstream(nc);
const kv = await new Kvm(js).open(names.kvBucket);
const { ids } = await ensureWorkerBuckets(js, await jetstreamManager(nc), names);
const port = parentPort;
if (!port) throw new Error("applier-thread.ts runs as a worker thread (bench/support/applier.ts)");
// A job is staged first (its 150 KB snapshot copied to this thread outside the timed turn),
// then started by its number alone.
const staged = new Map<number, ApplyJob>();
port.on("message", (message: ApplyJob | number | "stop") => {
  if (message === "stop") {
    void nc.close().then(() => port.close());
    return;
  }
  if (typeof message !== "number") {
    staged.set(message.n, message);
    return;
  }
  const job = staged.get(message);
  staged.delete(message);
  if (!job) {
    port.postMessage({ n: message, error: `job ${message} was not staged` });
    return;
  }
  // As the worker does: the id claimed on arrival, then the snapshot written.
  claimMessageId(ids, job.thread, job.id, job.seq)
    .then(() => kv.put(job.thread, job.snapshot))
    .then(
      () => port.postMessage({ n: job.n }),
      (err: unknown) => port.postMessage({ n: job.n, error: (err as Error).message }),
    );
});
port.postMessage("ready");
