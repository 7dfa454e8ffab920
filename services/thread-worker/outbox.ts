import type { SummaryEvent } from "../../shared/history.ts";
import type { OutboxNode } from "../../shared/thread.ts";
import { METRIC } from "./metrics.ts";
import type { SlotTools } from "./slot-tools.ts";

/**
 * Publishes the free leaves (built without a model call) waiting in the thread's outbox to
 * HISTORY, all at once; the caller then tells the actor (`outbox.published`). A record saved by
 * an older worker may hold free parents too: they are published as they were.
 */
export async function publishOutbox(
  tools: SlotTools,
  outbox: readonly OutboxNode[],
): Promise<void> {
  const { ctx, thread } = tools;
  await Promise.all(
    outbox.map((node) =>
      tools.retry(`publish free node ${node.level}:${node.index} to HISTORY`, () => {
        const event: SummaryEvent = {
          thread,
          level: node.level,
          index: node.index,
          text: node.text,
          until: node.until,
          by: "free",
        };
        // Set, not spread in: a spread copy is V8's slow path (one event per node).
        if (node.message) event.message = node.message;
        return ctx.history.publish(event);
      }),
    ),
  );
  for (const node of outbox) {
    ctx.metrics.add(METRIC.summaries, 1, {
      kind: node.level === 0 ? "leaf" : "merge",
      source: "free",
    });
  }
}
