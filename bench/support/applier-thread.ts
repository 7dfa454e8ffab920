// The worker of bench prompt, on a thread and a NATS connection of its own (bench/support/
// applier.ts starts it): a real worker is another process, and neither its core's work (a new
// state and a ~150 KB snapshot per message) nor its writes may be charged to the event loop that
// times the turns. It builds each thread (its messages published, its snapshot put), computes a
// turn's message applied before the turn, and writes it when the turn starts.
import { parentPort, workerData } from "node:worker_threads";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { Message } from "../../shared/events.ts";
import { DEFAULT_SETTINGS } from "../../shared/settings.ts";
import { encodeSnapshot } from "../../shared/snapshot.ts";
import { initialThreadState, type ThreadState } from "../../shared/thread.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureWorkerBuckets } from "../../services/nats/buckets.ts";
import { claimMessageId } from "../../services/nats/id-index.ts";
import { subjects } from "../../services/nats/subjects.ts";
import type { ApplierRequest, ThreadStats } from "./applier.ts";
import { fullThread, tailTokens, withMessage } from "./full-thread.ts";
import { outgoing, publishAll } from "./load.ts";

const { url, names } = workerData as { url: string; names: InfraNames };
const nc = await connectNats({ url, name: "bench-prompt-worker" });
const js = jetstream(nc);
const kv = await new Kvm(js).open(names.kvBucket);
const { ids } = await ensureWorkerBuckets(js, await jetstreamManager(nc), names);
const s = subjects(names);
const port = parentPort;
if (!port) throw new Error("applier-thread.ts runs as a worker thread (bench/support/applier.ts)");

/** Each thread's state as last written to KV. */
const states = new Map<string, ThreadState>();
/** Per thread, its next message computed and not yet written. */
const staged = new Map<
  string,
  { id: string; seq: number; state: ThreadState; snapshot: Uint8Array }
>();

const statsOf = (state: ThreadState, next: number): ThreadStats => ({
  next,
  count: state.count,
  outlineBytes: state.outlineBytes,
  outlineLines: state.outline.length,
  tailTokens: tailTokens(state),
  tailMessages: state.tail.length,
});

async function build(thread: string): Promise<ThreadStats> {
  const messages = fullThread(thread);
  const seqs = await publishAll(
    js,
    messages.map((m) => outgoing(s.messageCreated(thread), m)),
    1,
  );
  let state = initialThreadState(thread, DEFAULT_SETTINGS);
  for (const [i, m] of messages.entries()) state = withMessage(state, m, seqs[i] as number);
  await kv.put(thread, encodeSnapshot(state));
  states.set(thread, state);
  return statsOf(state, messages.length);
}

/**
 * The message applied on the sequence it will be stored at, and its snapshot encoded (before the
 * turn, so a turn races the writes alone): whether it made a cut.
 */
function stage(thread: string, message: Message, seq: number): boolean {
  const before = states.get(thread);
  if (!before) throw new Error(`thread ${thread} was not built`);
  const state = withMessage(before, message, seq);
  staged.set(thread, { id: message.id, seq, state, snapshot: encodeSnapshot(state) });
  return state.boundary !== before.boundary;
}

/** As the worker does: the id claimed on arrival, then the snapshot written. */
async function apply(thread: string): Promise<void> {
  const job = staged.get(thread);
  if (!job) throw new Error(`no message of ${thread} was staged`);
  staged.delete(thread);
  states.set(thread, job.state);
  await claimMessageId(ids, thread, job.id, job.seq);
  await kv.put(thread, job.snapshot);
}

async function handle(request: ApplierRequest): Promise<unknown> {
  switch (request.kind) {
    case "build":
      return build(request.thread);
    case "stage":
      return stage(request.thread, request.message, request.seq);
    case "apply":
      return apply(request.thread);
  }
}

port.on("message", (message: ApplierRequest | "stop") => {
  if (message === "stop") {
    void nc.close().then(() => port.close());
    return;
  }
  handle(message).then(
    (value) => port.postMessage({ n: message.n, value }),
    (err: unknown) => port.postMessage({ n: message.n, error: (err as Error).message }),
  );
});
port.postMessage("ready");
