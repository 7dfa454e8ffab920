import type { NatsConnection } from "@nats-io/transport-node";
import { rebuildSubject } from "../../search/api.ts";

/** How long the first search service may take to rebuild (it reads all of CHAT). */
const FIRST_ANSWER_MS = 30 * 60_000;
/** After an answer, how long to wait for the others (they read the same stream). */
const OTHERS_MS = 5_000;

interface RebuildAnswer {
  instance?: string;
  messages?: number;
  threads?: number;
  seconds?: number;
  error?: { message?: string };
}

/**
 * `outline replay --all --search`: asks every running search service (no queue group) to rebuild
 * its index from CHAT and prints what each answers. Returns how many failed.
 */
export async function rebuildSearchIndexes(
  nc: NatsConnection,
  apiPrefix: string,
  out: (line: string) => void,
): Promise<number> {
  let answered = 0;
  let failed = 0;
  try {
    const replies = await nc.requestMany(rebuildSubject(apiPrefix), "", {
      strategy: "stall",
      stall: OTHERS_MS,
      maxWait: FIRST_ANSWER_MS,
    });
    for await (const reply of replies) {
      answered += 1;
      const body = reply.json<RebuildAnswer>();
      if (reply.headers?.get("Outline-Status") !== "200") {
        failed += 1;
        out(`search index of ${body.instance}: rebuild failed: ${body.error?.message}`);
      } else {
        out(
          `search index of ${body.instance}: rebuilt from CHAT, ${body.messages} messages of ${body.threads} threads in ${body.seconds} s`,
        );
      }
    }
  } catch (err) {
    if (!/no responders/i.test((err as Error).message)) throw err;
  }
  if (answered === 0) {
    out("no search service answered: none runs (npm start runs one when HISTORY_SEARCH=on)");
  }
  return failed;
}
