import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { afterEach, describe, expect, it } from "vitest";
import type { SummaryEvent } from "../shared/history.ts";
import { DirectReader } from "../services/nats/direct-reader.ts";
import { InboxRequests } from "../services/nats/inbox-requests.ts";
import { KvWriter } from "../services/nats/kv-writer.ts";
import { historyNodes } from "../services/thread-worker/history-nodes.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function setup() {
  const { nc, h } = await scope.setup("history-nodes-test");
  const inbox = new InboxRequests(nc, 2_000);
  closers.push(() => inbox.close());
  const writer = new KvWriter(inbox);
  const reader = new DirectReader(inbox);
  return { h, writer, reader, nodes: historyNodes(writer, reader, h.names, h.s) };
}

const node = (thread: string, text: string): SummaryEvent => ({
  thread,
  level: 1,
  index: 3,
  text,
  until: "2026-11-30T12:00:00.000Z",
  by: "fake",
});
const encoder = new TextEncoder();

describe("summary nodes on HISTORY through the worker's own inboxes", () => {
  it("publishes a node once and reads it back; a node never published reads as undefined", async () => {
    const { nodes } = await setup();
    expect(await nodes.read("hn-a", 1, 3)).toBeUndefined();
    const event = node("hn-a", "first text");
    expect(await nodes.publish(event)).toEqual(event);
    expect(await nodes.read("hn-a", 1, 3)).toEqual(event);
  });

  it("the stored text wins: a second build of the node (same Msg-Id, or past the window) gets the first", async () => {
    const { h, nodes } = await setup();
    const first = node("hn-b", "first text");
    await nodes.publish(first);
    // Within the de-duplication window: the stream answers "duplicate".
    expect(await nodes.publish(node("hn-b", "second text"))).toEqual(first);
    // Past it (a publish without the Msg-Id, as after the window): the expected sequence refuses.
    const other = node("hn-c", "stored by a crashed worker");
    await h.js.publish(h.s.historyNode("hn-c", 1, 3), JSON.stringify(other));
    expect(await nodes.publish(node("hn-c", "rebuilt"))).toEqual(other);
  });

  it("a subject holding something that is not a node is a clear error, not a silent overwrite", async () => {
    const { h, nodes } = await setup();
    await h.js.publish(h.s.historyNode("hn-d", 1, 3), "not a node");
    expect(await nodes.read("hn-d", 1, 3)).toBeUndefined();
    await expect(nodes.publish(node("hn-d", "text"))).rejects.toThrow(/is not a summary node/);
  });

  it("KvWriter reports the server's refusal as nats.js does; DirectReader names a missing stream", async () => {
    const { h, writer, reader } = await setup();
    const subject = h.s.historyNode("hn-e", 0, 0);
    const stored = await writer.publish(subject, encoder.encode("{}"), { msgId: "hn-e:0:0" });
    expect(stored.duplicate).toBe(false);
    const again = await writer.publish(subject, encoder.encode("{}"), { msgId: "hn-e:0:0" });
    expect(again).toEqual({ seq: stored.seq, duplicate: true });
    const refusal = await writer.write(subject, encoder.encode("{}"), 0).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(JetStreamApiError);
    expect((refusal as JetStreamApiError).code).toBe(JetStreamApiCodes.StreamWrongLastSequence);
    const got = await reader.lastBySubject(h.names.historyStream, subject);
    expect(got).toMatchObject({ seq: stored.seq, subject });
    await expect(reader.lastBySubject("NO_SUCH_STREAM_X", subject)).rejects.toThrow(
      /stream NO_SUCH_STREAM_X failed: .*check that the stream exists/,
    );
  });
});
