import type { OutboxNode } from "../../shared/thread.ts";
import { METRIC } from "./metrics.ts";
import type { SlotTools } from "./slot-tools.ts";

/**
 * Publishes the free nodes (built without a model call) waiting in the thread's outbox to
 * HISTORY, all at once; the caller then tells the actor (`outbox.published`).
 */
export async function publishOutbox(
  tools: SlotTools,
  outbox: readonly OutboxNode[],
): Promise<void> {
  const { ctx, thread } = tools;
  await Promise.all(
    outbox.map((node) =>
      tools.retry(`publish free node ${node.level}:${node.index} to HISTORY`, () =>
        ctx.history.publish({
          thread,
          level: node.level,
          index: node.index,
          text: node.text,
          until: node.until,
          by: "free",
          ...(node.message ? { message: node.message } : {}),
        }),
      ),
    ),
  );
  for (const node of outbox) {
    ctx.metrics.add(METRIC.summaries, 1, {
      kind: node.level === 0 ? "leaf" : "merge",
      source: "free",
    });
  }
}
