import { readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, inject, it } from "vitest";
import type { Message } from "../shared/events.ts";
import { connectNats } from "../services/nats/connect.ts";
import { DEAD_LETTER_HEADERS, ensureTopology } from "../services/nats/topology.ts";
import { METRIC } from "../services/thread-worker/metrics.ts";
import type { ThreadWorker } from "../services/thread-worker/worker.ts";
import {
  chatMessage,
  expectedSnapshot,
  harness,
  publishMessage,
  readSnapshot,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { startSmallWorker } from "./support/worker-scope.ts";

// The corpus of SPEC §7's "anything that does not parse or validate": each bad event must end as
// a dead letter whose reason says what to fix, with no crash, and every valid event around it
// applied exactly as the pure core would.

type Payload =
  | { raw: string }
  | { bytes: number[] }
  | { parts: (string | number[])[] }
  | { json: unknown }
  | { message: Omit<Message, "text">; textBytes: number | "max" }
  | { filler: "max" }
  | { sameIdAs: number; text: string };

interface BadEvent {
  name: string;
  subject: string;
  wide?: boolean;
  payload: Payload;
  msgId?: string;
  expect: "dead" | "refused" | "deduplicated" | "applied" | "deleted";
  reason?: string;
}

const corpus = (
  JSON.parse(readFileSync("test/fixtures/bad-events.json", "utf8")) as { events: BadEvent[] }
).events;

const connections: NatsConnection[] = [];
const workers: ThreadWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop().catch(() => {});
  for (const nc of connections.splice(0)) await nc.close().catch(() => {});
});

const encoder = new TextEncoder();
// What a publish adds around the payload (subject, Nats-Msg-Id header): kept clear of the limit.
const ENVELOPE = 512;

/** `wide`: the CHAT stream captures `<prefix>.>`, as a platform's existing stream may. */
async function setup(wide: boolean): Promise<{ h: Harness; worker: ThreadWorker }> {
  const names = uniqueNames();
  const nc = await connectNats({ url: inject("natsUrl"), name: "bad-input-test" });
  connections.push(nc);
  if (wide) {
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: names.chatStream,
      subjects: [`${names.chatPrefix}.>`],
      duplicate_window: 120_000_000_000,
      allow_direct: true,
    });
  }
  await ensureTopology(nc, names);
  const h = await harness(nc, names);
  const worker = await startSmallWorker(h);
  workers.push(worker);
  return { h, worker };
}

function subjectOf(h: Harness, e: BadEvent): string {
  return `${h.names.chatPrefix}.${e.subject.slice("chat.".length)}`;
}

function payloadOf(h: Harness, e: BadEvent): { data: Uint8Array; message?: Message } {
  const p = e.payload;
  const max = (h.nc.info?.max_payload ?? 1024 * 1024) - ENVELOPE;
  if ("raw" in p) return { data: encoder.encode(p.raw) };
  if ("bytes" in p) return { data: new Uint8Array(p.bytes) };
  if ("parts" in p) return { data: partsBytes(p.parts) };
  if ("json" in p) return { data: encoder.encode(JSON.stringify(p.json)) };
  // Headerless raw bytes right up to the limit: its dead letter's headers no longer fit beside it.
  if ("filler" in p) return { data: new Uint8Array(max + ENVELOPE - 64).fill(0x78) };
  if ("sameIdAs" in p) {
    const message = { ...chatMessage("t", p.sameIdAs), text: p.text };
    return { data: encoder.encode(JSON.stringify(message)), message };
  }
  const shell = JSON.stringify({ ...p.message, text: "" });
  const size = p.textBytes === "max" ? max - shell.length : p.textBytes;
  const message = { ...p.message, text: "y".repeat(size) };
  return { data: encoder.encode(JSON.stringify(message)), message };
}

/** Strings as their UTF-8 bytes, arrays of numbers as those bytes, one after the other. */
function partsBytes(parts: (string | number[])[]): Uint8Array {
  return new Uint8Array(
    parts.flatMap((part) => (typeof part === "string" ? [...encoder.encode(part)] : part)),
  );
}

/** Every dead letter on the test's DEAD stream, by the CHAT sequence it came from. */
type Letter = { reason: string; truncated: string; data: Uint8Array };
async function deadLetters(h: Harness): Promise<Map<number, Letter>> {
  const out = new Map<number, Letter>();
  const info = await h.jsm.streams.info(h.names.deadStream);
  if (info.state.messages === 0) return out;
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await h.jsm.streams.getMessage(h.names.deadStream, { seq });
    if (!m) continue;
    out.set(Number(m.header.get(DEAD_LETTER_HEADERS.seq)), {
      reason: m.header.get(DEAD_LETTER_HEADERS.reason),
      truncated: m.header.get(DEAD_LETTER_HEADERS.truncated),
      data: m.data,
    });
  }
  return out;
}

describe("bad input corpus (test/fixtures/bad-events.json)", () => {
  it("dead-letters every bad event with an actionable reason; every valid event around them is applied", async () => {
    const { h, worker } = await setup(true);
    const stored: { e: BadEvent; seq: number; data: Uint8Array }[] = [];
    let i = 0;
    for (const e of corpus) {
      // A valid message of thread t before every corpus event: none may be lost or reordered.
      await publishMessage(h, chatMessage("t", i++));
      const { data, message } = payloadOf(h, e);
      const subject = subjectOf(h, e);
      let outcome: { seq: number; duplicate: boolean } | Error;
      try {
        if (e.expect === "applied" && message) {
          outcome = await publishMessage(h, message);
        } else {
          const ack = await h.js.publish(subject, data, {
            ...(e.msgId ? { msgID: e.msgId } : {}),
            timeout: 5_000,
          });
          outcome = { seq: ack.seq, duplicate: ack.duplicate };
        }
      } catch (err) {
        outcome = err as Error;
      }
      if (e.expect === "refused") {
        expect(outcome, e.name).toBeInstanceOf(Error);
        expect((outcome as Error).message, e.name).toMatch(new RegExp(e.reason ?? ""));
        continue;
      }
      expect(outcome, `${e.name}: publish`).not.toBeInstanceOf(Error);
      const ack = outcome as { seq: number; duplicate: boolean };
      if (e.expect === "deduplicated") {
        expect(ack.duplicate, e.name).toBe(true);
        continue;
      }
      stored.push({ e, seq: ack.seq, data });
    }
    await publishMessage(h, chatMessage("t", i++));

    const dead = stored.filter((s) => s.e.expect === "dead");
    await waitFor(
      `${dead.length} dead letters`,
      async () => (await deadLetters(h)).size >= dead.length,
    );
    await waitSettled(h, ["t"]);
    // Thread t holds exactly its valid messages (the big one included), as the pure core says.
    expect(await readSnapshot(h, "t")).toEqual(await expectedSnapshot(h, "t", SMALL));
    expect((await readSnapshot(h, "t"))?.count).toBe(i + 1);

    const letters = await deadLetters(h);
    expect(letters.size, "one dead letter per bad event, nothing else").toBe(dead.length);
    for (const { e, seq, data } of dead) {
      const letter = letters.get(seq);
      expect(letter, `${e.name}: dead letter for CHAT #${seq}`).toBeDefined();
      expect(letter?.reason, e.name).toMatch(new RegExp(e.reason ?? ""));
      // The original bytes, unless they would not fit beside the reason (then a note says so).
      if (data.length < 100_000) expect(letter?.data, `${e.name}: original bytes`).toEqual(data);
      else expect(letter?.truncated, e.name).toMatch(/bytes kept; the whole event is in stream/);
    }
    // Deleted threads answer nothing; nothing crashed.
    expect(await readSnapshot(h, "gone")).toBeNull();
    expect(await readSnapshot(h, "never")).toBeNull();
    expect(worker.metrics.get(METRIC.threadErrors)).toBe(0);
  });

  it("narrow stream: subjects outside `<prefix>.*.message.created|thread.deleted` are refused at publish", async () => {
    const { h } = await setup(false);
    for (const e of corpus.filter((x) => x.wide)) {
      const { data } = payloadOf(h, e);
      const err = await h.js.publish(subjectOf(h, e), data, { timeout: 2_000 }).then(
        () => undefined,
        (x: unknown) => x as Error,
      );
      // nats.js reports "no stream captures this subject" as 503 / "jetstream is not enabled".
      expect(err, e.name).toBeInstanceOf(Error);
    }
  });
});
