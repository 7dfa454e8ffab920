import { parseArgs } from "node:util";
import { jetstream } from "@nats-io/jetstream";
import { threadIdSchema } from "../../shared/events.ts";
import type { OpenAIMessage } from "../../shared/prompt.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { loadSettings } from "../config/load.ts";
import { connectNats, redactUrl } from "../nats/connect.ts";
import { subjects } from "../nats/subjects.ts";
import { ensureTopology } from "../nats/topology.ts";
import { ApiError } from "../api/api-error.ts";
import { promptBuilderClient, requirePromptBuilder, type PromptBuilderClient } from "../cli/ask.ts";
import { plantedFacts, script } from "./script.ts";
import { natsUrlSource } from "../config/nats-url.ts";
import { sleep } from "../util/wait.ts";

const USAGE = `usage: npm run demo -- [--thread T] [--messages N] [--every K]

Plays a scripted conversation (N messages, default 3000, with planted facts) into the running
system at NATS_URL, and shows every K messages (default 250) the prompt size staying bounded,
cuts and merges as they happen, then the zoom path down to a planted fact. The prompts, outlines
and zooms are the running prompt-builder's (npm start), built with its settings as an agent gets
them. Run the system with small settings to see many cuts, e.g.
HISTORY_TAIL=2000,4000 HISTORY_OUTLINE=6000,12000 npm start.`;

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

/** The thread's outline; undefined before the prompt-builder sees its first message. */
async function snapshotOf(
  ops: PromptBuilderClient,
  thread: string,
): Promise<OutlineSnapshot | undefined> {
  try {
    return await ops.outline({ thread });
  } catch (err) {
    if (err instanceof ApiError && err.code === "THREAD_NOT_FOUND") return undefined;
    throw err;
  }
}

/** What the demo was doing once it started playing, for the message if that fails. */
const progress = { doing: undefined as string | undefined, natsLost: false, url: "" };

/** An error as the demo's one line: once playing, what failed and what to check. */
function failure(err: unknown): string {
  const reason = (err as Error).message;
  if (progress.doing === undefined) return `demo: ${reason}`;
  const head = `demo: stopped while ${progress.doing}: ${reason}`;
  if (progress.natsLost) {
    return `${head}; NATS at ${progress.url} went away meanwhile: is npm start still running?`;
  }
  // The prompt-builder's errors say whom they asked and what to do.
  if (err instanceof ApiError) return head;
  return `${head}; is npm start still running (NATS at ${progress.url})?`;
}

/** A bad argument: what is wrong, then the usage; exit code 2. */
function refuse(problem: string): number {
  console.error(`demo: ${problem}\n\n${USAGE}`);
  return 2;
}

async function main(): Promise<number> {
  let values;
  try {
    values = parseArgs({
      options: {
        thread: { type: "string" },
        messages: { type: "string" },
        every: { type: "string" },
        config: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }).values;
  } catch (err) {
    return refuse((err as Error).message);
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const count = Number(values.messages ?? 3000);
  const every = Number(values.every ?? 250);
  if (!Number.isInteger(count) || count < 10 || !Number.isInteger(every) || every < 1) {
    return refuse("--messages must be a whole number ≥ 10 and --every ≥ 1");
  }
  // Refused here, with the rule (SPEC §7), rather than by the first subject built from it.
  if (values.thread !== undefined) {
    const check = threadIdSchema.safeParse(values.thread);
    const rule = check.error?.issues[0]?.message;
    if (rule !== undefined) {
      return refuse(`--thread '${values.thread.slice(0, 140)}': ${rule}`);
    }
  }
  const thread = values.thread ?? `demo-${Date.now().toString(36)}`;
  const config = loadSettings();
  const { url, from } = natsUrlSource(config);
  progress.url = redactUrl(url);
  const nc = await connectNats({
    url,
    from,
    name: "outline-demo",
    auth: config.auth,
    startupTimeoutMs: 3_000,
  });
  void (async () => {
    for await (const status of nc.status())
      if (status.type === "disconnect") progress.natsLost = true;
  })();
  await ensureTopology(nc, config.names, { replicas: config.replicas });
  const js = jetstream(nc);
  const s = subjects(config.names);
  // The prompt-builder's answers, with its settings: what an agent of this system gets.
  const ops = promptBuilderClient(nc, config.names.apiPrefix);
  await requirePromptBuilder(ops, thread);
  console.log(
    `demo: ${count} messages into thread ${thread} at ${progress.url}; prompts from the prompt-builder on ${config.names.apiPrefix}.prompt, cuts as the worker's settings make them`,
  );

  let lastBoundary = 0;
  let lastMerges = 0;
  let maxPrompt = 0;
  let conversation = 0;
  let lastSeq = 0;
  let sent = 0;
  // Waits (bounded) for the worker to apply what was sent, so each report shows the cuts and
  // merges of its stretch of the conversation rather than a worker far behind.
  const caughtUp = async (ms: number) => {
    progress.doing = `waiting for the worker to apply message ${sent} (asking the prompt-builder for the outline)`;
    const deadline = Date.now() + ms;
    for (;;) {
      const snap = await snapshotOf(ops, thread);
      if (snap && snap.seq >= lastSeq && snap.pending.jobs === 0 && snap.pending.cuts === 0)
        return true;
      if (Date.now() > deadline) return false;
      await sleep(100);
    }
  };
  const report = async (sent: number) => {
    await caughtUp(15_000);
    progress.doing = `asking the prompt-builder for the prompt after message ${sent}`;
    const snap = await snapshotOf(ops, thread);
    const prompt = await ops.prompt({ thread, agent: "agent" });
    const bytes = (prompt.messages as OpenAIMessage[]).reduce(
      (n, m) => n + Buffer.byteLength(m.content),
      0,
    );
    maxPrompt = Math.max(maxPrompt, bytes);
    if (snap && snap.boundary > lastBoundary) {
      console.log(`  cut: boundary ${lastBoundary} → ${snap.boundary}`);
      lastBoundary = snap.boundary;
    }
    const merges = snap ? snap.boundary - snap.lines.length : 0;
    if (merges > lastMerges) {
      console.log(
        `  merges: ${merges - lastMerges} more (outline now ${snap?.lines.length} lines, ${kb(snap?.bytes ?? 0)})`,
      );
      lastMerges = merges;
    }
    console.log(
      `${String(sent).padStart(6)} sent  conversation ${kb(conversation).padStart(9)}  prompt ${kb(bytes).padStart(8)} (${prompt.messages.length} msgs, outline ${prompt.stats.lines} lines, tail ~${prompt.stats.tailTokens} tok)`,
    );
  };

  for (const message of script(thread, count)) {
    progress.doing = `sending message ${sent + 1} of ${count} to ${s.messageCreated(thread)}`;
    const ack = await js.publish(s.messageCreated(thread), JSON.stringify(message), {
      msgID: message.id,
    });
    lastSeq = ack.seq;
    conversation += Buffer.byteLength(message.text);
    sent += 1;
    // The last message's report comes below, once the worker caught up: made here too, it
    // printed the same line twice.
    if (sent % every === 0 && sent < count) await report(sent);
  }
  // Let the worker catch up, so the outline covers the planted facts.
  if (!(await caughtUp(120_000))) {
    console.error(
      "demo: the worker did not catch up within 120 s; is it running against the same NATS_URL?",
    );
    return 1;
  }
  await report(sent);
  console.log(
    `prompt stayed at most ${kb(maxPrompt)} while the conversation grew to ${kb(conversation)} (${((100 * maxPrompt) / Math.max(1, conversation)).toFixed(1)}%)`,
  );
  progress.doing = "asking the prompt-builder for the tools and the zoom path";
  const tools = await ops.tools({ thread });
  console.log(`the agent is offered the tools: ${tools.map((t) => t.function.name).join(", ")}`);

  const snap = (await snapshotOf(ops, thread)) as OutlineSnapshot;
  const fact =
    plantedFacts(count).find((f) => f.position < snap.boundary) ?? plantedFacts(count)[0];
  if (!fact) return 0;
  console.log(`\nzoom path to message ${fact.position} ("${fact.text}"):`);
  const line = snap.lines.find((l) => l.id <= fact.position && fact.position < l.id + l.n);
  if (!line) {
    console.log(`  message ${fact.position} is still whole in the tail; nothing to zoom`);
    return 0;
  }
  console.log(`  outline line ${line.id}+${line.n}|${line.text.slice(0, 120)}`);
  let id = line.id;
  let n = line.n;
  while (n > 1) {
    const reply = await ops.zoom({ thread, id, n });
    if (!("lines" in reply)) break;
    for (const l of reply.lines) {
      const mark = l.id <= fact.position && fact.position < l.id + l.n ? "→" : " ";
      console.log(`  ${mark} zoom(${id}, ${n}): ${l.id}+${l.n}|${l.text.slice(0, 110)}`);
    }
    const half = reply.lines.find((l) => l.id <= fact.position && fact.position < l.id + l.n);
    if (!half) break;
    id = half.id;
    n = half.n;
  }
  const whole = await ops.zoom({ thread, id: fact.position, n: 1 });
  if ("message" in whole) {
    console.log(
      `  zoom(${fact.position}, 1): ${whole.message.from} at ${whole.message.at}: ${whole.message.text}`,
    );
  }
  await nc.drain();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(failure(err));
    process.exit(1);
  },
);
