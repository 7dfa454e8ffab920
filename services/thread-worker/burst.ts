import type { Message } from "../../shared/events.ts";
import type { IdClaim } from "../../shared/message-ids.ts";
import { sameThreadSettings, threadSettingsOf } from "../../shared/settings.ts";
import type { BuiltNode } from "../../shared/step.ts";
import type { ThreadState } from "../../shared/thread.ts";
import type { AckLedger } from "./acks.ts";
import { purgeChat } from "./eraser.ts";
import type { HostedActor } from "./hosted-actor.ts";
import type { IdClaims } from "./id-claims.ts";
import { intake, type IntakeCursor } from "./intake.ts";
import { METRIC } from "./metrics.ts";
import { Rejections } from "./rejections.ts";
import type { ChatEntry, Item } from "./slot-queue.ts";
import type { SlotTools } from "./slot-tools.ts";
import type { SnapshotSchedule } from "./snapshot-schedule.ts";

/**
 * A state changed only by summaries, with more of the thread's summaries running, is saved
 * within this many save delays (the burst that ends them asks within one).
 */
const SETTLING_SAVES = 5;

/** The label of an applied message, made once rather than per message. */
const MESSAGE_EVENT = { kind: "message" } as const;

/** What a burst works with: the slot's parts, and the slot's own durable steps. */
export interface BurstParts {
  tools: SlotTools;
  hosted: HostedActor;
  cursor: IntakeCursor;
  acks: AckLedger;
  ids: IdClaims;
  snapshots: SnapshotSchedule;
  /** Saves the actor state (stored-state.ts). */
  save: () => Promise<void>;
  /** Finishes a thread.deleted: purges, then `erase.done`. */
  erase: () => Promise<void>;
  publishOutbox: () => Promise<void>;
  /** Throws once the slot has ended. */
  checkAlive: () => void;
}

/**
 * Applies one burst of a slot's queue: its items in stream order (intake), ids claimed, each
 * event sent to the actor, then the effects made durable (outbox, id index, save) before the
 * chat events are acknowledged, and the snapshot asked for.
 */
export class BurstApplier {
  readonly #p: BurstParts;
  /** Made on the first event not applied: most threads never have one. */
  #rejections: Rejections | undefined;

  constructor(parts: BurstParts) {
    this.#p = parts;
  }

  get #rejected(): Rejections {
    return (this.#rejections ??= new Rejections(this.#p.tools));
  }

  async apply(items: Item[]): Promise<void> {
    const { tools, hosted, cursor, acks, ids, snapshots } = this.#p;
    const statsBefore = hosted.state().stats;
    // Acknowledged by the save that stores their effect (or at once if they have none); listed
    // first so a slot that stops in the middle of the burst knows what it gives up.
    for (const item of items) if (item.kind === "chat") acks.hold(item.msg);
    const taking = intake(tools, items, cursor, hosted.state().deleted);
    const steps = Array.isArray(taking) ? taking : await taking;
    const claiming = ids.claim(steps, hosted.state(), cursor.seen);
    const claims = claiming instanceof Map ? claiming : await claiming;
    let chatSeen = false;
    // Summaries that came back together go to the actor as one event (one step, one hand-out of
    // jobs, one transition): with every message summarized, an event each was most of the
    // actor's events (bench e2e heavy).
    let built: BuiltNode[] = [];
    for (const step of steps) {
      if (step.kind === "built") {
        const { level, index } = step.ref;
        built.push({ level, index, text: step.text });
        continue;
      }
      if (built.length > 0) built = this.#sendBuilt(built);
      if (step.kind === "failed") {
        const { level, index } = step.ref;
        hosted.send({ type: "summary.failed", level, index, reason: step.reason });
      } else {
        chatSeen = true;
        const writing = this.#applyChat(step, claims);
        if (writing) await writing;
      }
    }
    if (built.length > 0) this.#sendBuilt(built);
    // A thread.deleted of this burst: the chart waits in `erasing` for the purges.
    const erased = hosted.erasing;
    if (erased) await this.#p.erase();
    else if (chatSeen && hosted.state().deleted) await purgeChat(tools, cursor.seen);
    if (hosted.state().outbox.length > 0) await this.#p.publishOutbox();
    // Checked here first: while the tail holds the whole thread (most bursts) there is nothing to
    // claim, and no promise or await per burst.
    if (ids.due(hosted.state())) await ids.flush(hosted.state());
    this.#p.checkAlive();
    // Chat events are acknowledged only once the state that includes them is stored (AckLedger).
    // A burst of summaries alone has nothing to acknowledge and is saved a little later,
    // coalesced: after a crash the older state asks for those nodes again and HISTORY answers
    // them, no model call. A burst that changed nothing (only redeliveries) is acknowledged now.
    if (chatSeen && hosted.dirty) acks.applied();
    if (hosted.changed && !hosted.state().deleted) snapshots.wanted = true;
    hosted.changed = false;
    this.#countStats(statsBefore, hosted.state().stats);
    // Summaries alone while more of the thread's are running: more such bursts are coming, so
    // the state and the snapshot wait for them (each is the whole state, rewritten: with every
    // message summarized they were most of the worker's bytes and CPU, bench e2e heavy). The
    // burst that ends the thread's jobs asks for both at the usual delays, which replace these.
    const settling = !chatSeen && hosted.jobsBusy() > 0;
    const { saveDelayMs, saveLingerMs, snapshotDelayMs, deliveries } = tools.ctx;
    if (!hosted.dirty) acks.ackStored();
    else if (erased || hosted.state().deleted || acks.lingerOver()) await this.#p.save();
    else acks.scheduleSave(settling ? saveDelayMs * SETTLING_SAVES : saveDelayMs);
    this.#p.checkAlive();
    // A snapshot never shows a chat event before the state that holds it is stored (a crash
    // cannot make the outline go back on the log); with nothing unsaved it may be written now.
    // Summaries alone while a backlog is delivered, or while more are coming, wait a linger: the
    // thread's next chat save or last summaries write the snapshot with them (off the event loop
    // they come back between messages, and a write per such burst was 4.5× the writes per
    // message). Caught up and settled, they go out at once.
    if (snapshots.wanted && !acks.unsaved) {
      snapshots.request(
        !chatSeen && (deliveries.behind || settling)
          ? Math.max(saveLingerMs, snapshotDelayMs)
          : undefined,
      );
    }
  }

  /**
   * Sends summaries that came back together; returns the next, empty, list. A method, not a
   * closure made per burst: tsx names each closure it compiles with a defineProperty call.
   */
  #sendBuilt(built: BuiltNode[]): BuiltNode[] {
    const [only] = built;
    this.#p.hosted.send(
      built.length === 1 && only
        ? { type: "summary.built", ...only }
        : { type: "summaries.built", nodes: built },
    );
    return [];
  }

  // Synchronous unless it has a write or a read to wait for (most events): no promise per event.
  #applyChat(entry: ChatEntry, claims: Map<number, IdClaim>): Promise<void> | undefined {
    const { tools, hosted, cursor } = this.#p;
    const { ctx, thread } = tools;
    const metrics = ctx.metrics;
    if (entry.seq <= cursor.seen) {
      metrics.add(METRIC.duplicates, 1, { why: "seq" });
      return undefined;
    }
    cursor.seen = entry.seq;
    hosted.dirty = true;
    const event = entry.event;
    const core = hosted.state();
    if (event.kind === "invalid") {
      // Passed over, it is still the newest event handled: the snapshot's `seq` shows it (a
      // coalesced write, as for a message), so readers stop serving it as newer than the
      // snapshot. A thread with no message yet has no snapshot to show it in.
      if (core.count > 0) hosted.changed = true;
      return this.#rejected.deadLetter(entry, event.reason);
    }
    if (event.kind === "deleted") return this.#applyDeleted(entry, event.at);
    const claim = claims.get(entry.seq);
    const firstSeq = claim?.type === "duplicate" ? claim.firstSeq : undefined;
    // The settings a thread runs under are its log's: recorded on HISTORY before the first
    // message applied under them (a new thread's first, or the first after HISTORY_* changed).
    // A deleted thread's chart refuses it (the step decides, the skip dead-letters it).
    if ((core.count > 0 && sameThreadSettings(core.settings, ctx.settings)) || hosted.refusing) {
      return this.#applyMessage(entry, event.message, firstSeq);
    }
    const settings = threadSettingsOf(ctx.settings);
    // In place, as every durable write: a stopped thread would wait an ack wait to be reloaded.
    const record = () => ctx.history.recordSettings({ thread, from: entry.seq, ...settings });
    return tools.retry("record the thread's settings on HISTORY", record).then(() => {
      if (!sameThreadSettings(hosted.state().settings, settings)) {
        hosted.send({ type: "settings.changed", settings });
      }
      return this.#applyMessage(entry, event.message, firstSeq);
    });
  }

  /** Sends a thread.deleted; a deleted thread's step skips it as a duplicate. */
  #applyDeleted(entry: ChatEntry, at: string): Promise<void> | undefined {
    const { hosted, tools } = this.#p;
    hosted.send({ type: "thread.deleted", at, seq: entry.seq });
    const skips = hosted.takeSkips();
    if (skips.length > 0) return this.#rejected.skipped(entry, skips);
    tools.ctx.metrics.add(METRIC.events, 1, { kind: "deleted" });
    return undefined;
  }

  /** Sends the message to the actor; what it did not apply goes to the rejections. */
  #applyMessage(
    entry: ChatEntry,
    message: Message,
    firstSeq: number | undefined,
  ): Promise<void> | undefined {
    const { hosted, tools } = this.#p;
    // Two literals, not a spread of an optional field: a spread copy is V8's slow path.
    hosted.send(
      firstSeq === undefined
        ? { type: "message.created", message, seq: entry.seq }
        : { type: "message.created", message, seq: entry.seq, firstSeq },
    );
    const skips = hosted.takeSkips();
    if (skips.length === 0) {
      tools.ctx.metrics.add(METRIC.events, 1, MESSAGE_EVENT);
      return undefined;
    }
    return this.#rejected.skipped(entry, skips);
  }

  #countStats(before: ThreadState["stats"], after: ThreadState["stats"]): void {
    // The core copies its stats only when it counts something: most bursts count nothing.
    if (after === before) return;
    const metrics = this.#p.tools.ctx.metrics;
    // A thread.deleted resets the stats: nothing to count then.
    if (after.cuts < before.cuts) return;
    metrics.add(METRIC.cuts, after.cuts - before.cuts);
    metrics.add(METRIC.batches, after.batches - before.batches);
    metrics.add(METRIC.merges, after.merges - before.merges);
    // Free parents are built here and never published (outbox.ts counts free leaves).
    metrics.add(METRIC.summaries, after.freeMerges - before.freeMerges, {
      kind: "merge",
      source: "free",
    });
    // The outline changes only at cuts: whether it stays over outline[1] is known only now.
    if (after.cuts > before.cuts) {
      const { ctx, thread } = this.#p.tools;
      ctx.outlineFloor.afterCuts(thread, this.#p.hosted.state());
    }
  }
}
