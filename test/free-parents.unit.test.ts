import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jobFor } from "../shared/job-view.ts";
import { nodeKey as key, type NodeRef } from "../shared/names.ts";
import type { BuiltNode } from "../shared/nodes.ts";
import { joinedText } from "../shared/render.ts";
import {
  appendMessage,
  boundedSummary,
  findBuilt,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../shared/thread.ts";
import { toPersisted } from "../services/thread-worker/actor-store.ts";
import { fakeSummary, makeMessage, settingsArb, textArb } from "./support/conversation.ts";

// Free parents are never published to HISTORY (SPEC, "Decided since the first version"). What
// makes that safe: a reader that finds a parent missing joins its children (zoom), and the
// worker's stored record keeps the text of every node it does not find on HISTORY (restore).

const runs = Number(process.env.PROPERTY_RUNS ?? 40);
const nodeKey = (ref: NodeRef) => key(ref.level, ref.index);

/** What zoom reads: a node from HISTORY, or a parent missing there as its children joined. */
function fromHistory(
  history: ReadonlyMap<string, string>,
  level: number,
  index: number,
): string | undefined {
  const stored = history.get(key(level, index));
  if (stored !== undefined || level === 0) return stored;
  const left = fromHistory(history, level - 1, index * 2);
  const right = fromHistory(history, level - 1, index * 2 + 1);
  return left === undefined || right === undefined ? undefined : joinedText(left, right);
}

function storeNodes(s: ThreadState): BuiltNode[] {
  return s.nodes.flatMap((level) => level.items.filter((n): n is BuiltNode => n !== null));
}

describe("free parents, left off HISTORY", () => {
  it("are joined back from HISTORY, and kept in the stored record, at every step", () => {
    const seen = { joinedLines: 0, keptInRecord: 0 };
    fc.assert(
      fc.property(
        settingsArb,
        fc.array(textArb, { minLength: 1, maxLength: 120, size: "max" }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 32 }),
        (settings, texts, choices) => {
          let s = initialThreadState("fp", settings);
          // HISTORY as the worker writes it: the outbox's free leaves and every model-built node.
          const history = new Map<string, string>();
          let i = 0;
          for (let step = 0; ; step++) {
            const choice = choices[step % choices.length] ?? 0;
            s = takeJobs(s, undefined, i < texts.length).state;
            if (i < texts.length && (s.inflight.length === 0 || choice % 3 === 0)) {
              const text = texts[i] as string;
              s = appendMessage(s, makeMessage("fp", i, text), i + 1).state;
              i += 1;
            } else if (s.inflight.length > 0) {
              const ref = s.inflight[choice % s.inflight.length];
              if (ref) {
                const text = fakeSummary(jobFor(s, ref));
                history.set(nodeKey(ref), boundedSummary(text, settings.line));
                s = summaryBuilt(s, ref, text).state;
              }
            } else if (i >= texts.length) break;
            for (const node of s.outbox) {
              expect(node.level, "only leaves wait to be published").toBe(0);
              expect(node.message?.seq).toBeGreaterThan(0);
              history.set(nodeKey(node), node.text);
            }
            s = outboxPublished(s, s.outbox.length);

            // Zoom: every outline line, and every node under it, reads back as built.
            for (const line of s.outline) {
              expect(fromHistory(history, line.level, line.index)).toBe(line.text);
              if (line.level > 0 && !history.has(nodeKey(line))) seen.joinedLines++;
            }
            // Restore: a node whose text the record strips is on HISTORY; the others keep theirs.
            const record = toPersisted("fp", i, false, { context: { core: s } });
            const strippedCore = record.snapshot.context.core;
            for (const node of storeNodes(s)) {
              const kept = findBuilt(strippedCore, node);
              if (kept?.text === "") expect(history.get(nodeKey(node))).toBe(node.text);
              else {
                expect(kept?.text).toBe(node.text);
                if (!history.has(nodeKey(node))) seen.keptInRecord++;
              }
            }
          }
        },
      ),
      { numRuns: runs },
    );
    // The runs reached both cases this test is about.
    expect(seen.joinedLines).toBeGreaterThan(0);
    expect(seen.keptInRecord).toBeGreaterThan(0);
  });
});
