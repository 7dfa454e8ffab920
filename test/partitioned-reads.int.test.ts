import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partitionMappings } from "../services/cluster/server-config.ts";
import type { InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { subjects } from "../services/nats/subjects.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { createReader } from "../services/nats/reader.ts";
import { startNatsServer, type LocalNats } from "../services/start/nats-server.ts";
import { nextThreadEvent } from "../services/thread-worker/chat-reader.ts";
import { chatMessage, uniqueNames } from "./support/thread-worker.ts";

// An existing CHAT stream written by one instance, then the server gains the partition mapping
// and the instances run partitioned (docs/scale-out.md, "Upgrading an existing CHAT stream"):
// each reader of stored subjects finds a thread's events under both forms, in stream order.
const PARTITIONS = 4;
let dir: string;
let server: LocalNats | undefined;
let nc: NatsConnection | undefined;
const single: InfraNames = uniqueNames();
const partitioned: InfraNames = { ...single, partitions: PARTITIONS };
const thread = "up-1";
const seqs: number[] = [];

async function start(mapped: boolean): Promise<NatsConnection> {
  const configFile = join(dir, "nats.conf");
  writeFileSync(configFile, mapped ? partitionMappings(single, PARTITIONS) : "");
  server = await startNatsServer({ storeDir: join(dir, "store"), preferredPort: 0, configFile });
  return connectNats({ url: server.url, name: "partitioned-reads" });
}

async function publish(conn: NatsConnection, i: number): Promise<void> {
  const { js } = await ensureTopology(conn, mapped ? partitioned : single);
  const m = chatMessage(thread, i);
  seqs.push((await js.publish(subjects(single).messageCreated(thread), JSON.stringify(m))).seq);
}
let mapped = false;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "outline-partitioned-"));
  nc = await start(false);
  for (let i = 0; i < 3; i++) await publish(nc, i);
  await nc.close();
  await server?.stop();
  mapped = true;
  nc = await start(true);
  for (let i = 3; i < 6; i++) await publish(nc, i);
}, 60_000);
afterAll(async () => {
  await nc?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a CHAT stream upgraded to partitions", () => {
  it("captures the mapped form in place and stores new events under it", async () => {
    const jsm = await jetstreamManager(nc as NatsConnection);
    const info = await jsm.streams.info(single.chatStream);
    expect(info.config.subjects).toEqual(subjects(partitioned).chatStreamSubjects);
    const s = subjects(partitioned);
    const [plain, mappedForm] = s.stored(thread, "message.created");
    const stored = await Promise.all(
      seqs.map(async (seq) => (await jsm.streams.getMessage(single.chatStream, { seq }))?.subject),
    );
    expect(stored).toEqual([plain, plain, plain, mappedForm, mappedForm, mappedForm]);
  });

  it("gap reads find the thread's next event under either form", async () => {
    const jsm = await jetstreamManager(nc as NatsConnection);
    const found: number[] = [];
    let from = 1;
    for (;;) {
      const next = await nextThreadEvent(jsm, partitioned, thread, from);
      if (!next) break;
      found.push(next.seq);
      from = next.seq + 1;
    }
    expect(found).toEqual(seqs);
  });

  it("the prompt-builder reads the newest message and every message after a point", async () => {
    for (const directReads of [8, 1]) {
      // directReads 1: after one direct get the rest comes through ordered consumers.
      const reader = createReader(nc as NatsConnection, partitioned, { directReads });
      expect(await reader.lastMessageSeq(thread)).toBe(seqs[5]);
      const after = await reader.messagesAfter(thread, 0, seqs[5] as number, 100);
      expect(after.map((m) => m.seq)).toEqual(seqs);
      expect(after.map((m) => m.message.id)).toEqual(seqs.map((_, i) => chatMessage(thread, i).id));
      const at = await reader.messageAt(thread, seqs[4] as number, chatMessage(thread, 4).id);
      expect(at?.message.id).toBe(chatMessage(thread, 4).id);
    }
  });
});
