import { claimId, type IdClaim } from "../../shared/message-ids.ts";
import type { ThreadState } from "../../shared/thread.ts";
import { claimMessageId } from "../nats/id-index.ts";
import type { BurstItem } from "./slot-queue.ts";
import type { SlotTools } from "./slot-tools.ts";

/** No message has left the tail and the thread was weighed from its first: the tail is all of it. */
export function isTailComplete(core: ThreadState): boolean {
  return core.complete && core.boundary === 0 && !core.deleted;
}

/**
 * A thread's claims on its message ids (shared/message-ids.ts). While the tail holds all of the
 * thread, ids are checked in memory (id → CHAT sequence) instead of in the KV index, and claimed
 * there all at once when the first cut takes messages out of the tail.
 */
export class IdClaims {
  readonly #tools: SlotTools;
  #unclaimed = new Map<string, number>();

  constructor(tools: SlotTools) {
    this.#tools = tools;
  }

  /** After a load: a state saved while the tail held the whole thread may have ids not indexed. */
  seed(core: ThreadState): void {
    if (!isTailComplete(core)) return;
    for (const entry of core.tail) this.#unclaimed.set(entry.message.id, entry.seq);
  }

  /**
   * Claims the ids of the burst's new messages (sequence above `seen`), in parallel; the claims
   * by CHAT sequence. Synchronous while the tail holds the whole thread (most bursts).
   */
  claim(
    items: BurstItem[],
    core: ThreadState,
    seen: number,
  ): Map<number, IdClaim> | Promise<Map<number, IdClaim>> {
    const claims = new Map<number, IdClaim>();
    if (core.deleted) return claims;
    const { ctx, thread } = this.#tools;
    // Ids of the burst, for the index's claims (the tail's check records them as it goes).
    const firstSeqOf = isTailComplete(core) ? undefined : new Map<string, number>();
    const pending: Promise<void>[] = [];
    for (const item of items) {
      if (item.kind !== "entry" || item.seq <= seen) continue;
      seen = item.seq;
      if (item.event.kind !== "message") continue;
      const { id } = item.event.message;
      const seq = item.seq;
      if (!firstSeqOf) {
        // The same id twice in one burst too: the first one, recorded here, is the message.
        claims.set(seq, claimId(this.#unclaimed, id, seq));
        continue;
      }
      const first = firstSeqOf.get(id);
      if (first !== undefined) {
        // The same id twice in one burst: the first one is the message.
        claims.set(seq, { type: "duplicate", firstSeq: first });
        continue;
      }
      firstSeqOf.set(id, seq);
      pending.push(
        this.#tools
          .retry("record the message id", () => claimMessageId(ctx.kv.ids, thread, id, seq))
          .then((claim) => {
            claims.set(seq, claim);
          }),
      );
    }
    if (pending.length === 0) return claims;
    return Promise.all(pending).then(() => claims);
  }

  /** Ids applied without a claim must go to the index now (see `flush`). */
  due(core: ThreadState): boolean {
    if (this.#unclaimed.size === 0) return false;
    return core.deleted || !isTailComplete(core);
  }

  /**
   * Once messages have left the tail (or the thread is no longer complete), every id applied
   * without a claim is recorded in the index, before any later message is checked against it
   * and before a state without them in the tail is saved.
   */
  async flush(core: ThreadState): Promise<void> {
    if (this.#unclaimed.size === 0) return;
    if (core.deleted) {
      this.#unclaimed.clear();
      return;
    }
    if (isTailComplete(core)) return;
    const { ctx, thread } = this.#tools;
    const unclaimed = [...this.#unclaimed];
    await Promise.all(
      unclaimed.map(([id, seq]) =>
        this.#tools
          .retry("record the message id", () => claimMessageId(ctx.kv.ids, thread, id, seq))
          .then((claim) => {
            // Applied already (the tail was checked); the index names an earlier copy, which
            // keeps any later copy out just as well.
            if (claim.type === "duplicate" && claim.firstSeq !== seq) {
              ctx.log.warn(
                `message id '${id}' of thread '${thread}' applied at CHAT sequence ${seq} is indexed at ${claim.firstSeq}`,
              );
            }
          }),
      ),
    );
    for (const [id] of unclaimed) this.#unclaimed.delete(id);
  }
}
