import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InboxRequests } from "../services/nats/inbox-requests.ts";
import { KvLeaderReader } from "../services/nats/kv-leader-reader.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();
const decoder = new TextDecoder();

describe("KvLeaderReader", () => {
  it("reads a key's last entry as nats.js's kv.get does: put, delete, purge, never written", async () => {
    const nc = await scope.connect("kv-leader-reader-test");
    const bucket = `klr_${randomUUID().slice(0, 8)}`;
    const kv = await new Kvm(jetstream(nc)).create(bucket, { history: 1 });
    const requests = new InboxRequests(nc);
    const reader = new KvLeaderReader(requests);
    try {
      expect(await reader.get(bucket, "never")).toBeNull();
      expect(await kv.get("never")).toBeNull();

      await kv.put("a", "one");
      const revision = await kv.put("a", "two");
      const put = await reader.get(bucket, "a");
      const theirs = await kv.get("a");
      expect(put).toMatchObject({ operation: "PUT", revision });
      expect(decoder.decode(put?.value)).toBe("two");
      expect(theirs).toMatchObject({ operation: put?.operation, revision: put?.revision });

      await kv.put("b", "x");
      await kv.delete("b");
      const deleted = await reader.get(bucket, "b");
      expect(deleted?.operation).toBe("DEL");
      expect(deleted?.revision).toBe((await kv.get("b"))?.revision);

      await kv.put("c", "y");
      await kv.purge("c");
      expect((await reader.get(bucket, "c"))?.operation).toBe("PURGE");

      await expect(reader.get(`${bucket}_missing`, "a")).rejects.toThrow(/404|not found/i);
    } finally {
      requests.close();
      await kv.destroy();
    }
  });
});
