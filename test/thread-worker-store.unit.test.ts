import { describe, expect, it } from "vitest";
import { appendMessage, initialThreadState, type ThreadState } from "../shared/thread.ts";
import {
  ActorStateError,
  parsePersisted,
  toPersisted,
  type PersistedActor,
} from "../services/thread-worker/actor-store.ts";
import { chatMessage, SMALL } from "./support/thread-worker.ts";

function stateWith(count: number): ThreadState {
  let state = initialThreadState("t", SMALL);
  for (let i = 0; i < count; i++) state = appendMessage(state, chatMessage("t", i), 10 + i).state;
  return state;
}

const persisted = (core: ThreadState): PersistedActor => ({ status: "active", context: { core } });
const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("actor state record", () => {
  it("stores the tail as columns and reads it back as the entries it came from (message reduced to its id)", () => {
    // As after a cut: the tail starts past position 0.
    const young = stateWith(40);
    const core = {
      ...young,
      boundary: 7,
      tail: young.tail.map((entry) => ({ ...entry, position: entry.position + 7 })),
    };
    const record = toPersisted("t", 49, false, persisted(core));
    expect(record.v).toBe(2);
    expect(record.snapshot.context.core.tail).toEqual([]);
    const back = parsePersisted("t", bytes(record), "outline-actors");
    expect(back.seen).toBe(49);
    expect(back.snapshot.context.core.tail).toEqual(
      core.tail.map((entry) => ({ ...entry, message: { id: entry.message.id } })),
    );
  });

  it("still reads a version-1 record (tail entries in the snapshot)", () => {
    const core = stateWith(5);
    const tail = core.tail.map((entry) => ({ ...entry, message: { id: entry.message.id } }));
    const v1 = {
      v: 1,
      thread: "t",
      seen: 14,
      erasing: false,
      snapshot: persisted({ ...core, tail: tail as unknown as ThreadState["tail"] }),
    };
    expect(parsePersisted("t", bytes(v1), "outline-actors").snapshot.context.core.tail).toEqual(
      tail,
    );
  });

  it("refuses a version-2 record whose tail columns do not match", () => {
    const record = toPersisted("t", 14, false, persisted(stateWith(5)));
    record.tail?.seqs.pop();
    expect(() => parsePersisted("t", bytes(record), "outline-actors")).toThrow(ActorStateError);
  });
});
