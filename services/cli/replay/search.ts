import { createInbox, headers, type NatsConnection } from "@nats-io/transport-node";
import { REBUILD_ACK_HEADER, rebuildSubject } from "../../search/api.ts";

/** How long a rebuild may take (it reads all of CHAT). */
const REBUILD_MS = 30 * 60_000;
/**
 * How long the search services have to say they rebuild (they answer at once): past it, the
 * replay waits for the report of each that said so, and for no one else.
 */
const ACK_WINDOW_MS = 2_000;

interface RebuildAnswer {
  instance?: string;
  messages?: number;
  threads?: number;
  seconds?: number;
  error?: { message?: string };
}

/** What the search services reported: indexes rebuilt, and those that failed or never reported. */
export interface SearchRebuild {
  rebuilt: number;
  failed: number;
}

/**
 * `outline replay --all --search`: asks every running search service (no queue group) to rebuild
 * its index from CHAT and prints what each answers. Each says at once that it rebuilds, so every
 * one of them is waited for however long its rebuild takes, and the wait ends with the last
 * report.
 */
export async function rebuildSearchIndexes(
  nc: NatsConnection,
  apiPrefix: string,
  out: (line: string) => void,
): Promise<SearchRebuild> {
  let rebuilt = 0;
  let failed = 0;
  /** Said they rebuild, and have not reported yet. */
  const rebuilding = new Set<string>();
  let windowOver = false;
  // An inbox of our own, not requestMany: the wait ends when the window is over and every
  // service that said it rebuilds has reported, which no requestMany strategy expresses.
  const inbox = createInbox();
  const replies = nc.subscribe(inbox);
  const window = setTimeout(() => {
    windowOver = true;
    if (rebuilding.size === 0) replies.unsubscribe();
  }, ACK_WINDOW_MS);
  const limit = setTimeout(() => replies.unsubscribe(), REBUILD_MS);
  try {
    const asked = headers();
    asked.set(REBUILD_ACK_HEADER, "1");
    nc.publish(rebuildSubject(apiPrefix), "", { reply: inbox, headers: asked });
    for await (const reply of replies) {
      // The server's "no responders": nothing listens on the subject, so no one will answer.
      if (reply.headers?.hasError && reply.headers.code === 503) break;
      const body = reply.json<RebuildAnswer>();
      const instance = body.instance ?? "(unnamed)";
      const status = reply.headers?.get("Outline-Status");
      if (status === "202") {
        rebuilding.add(instance);
        out(`search index of ${instance}: rebuilding from CHAT…`);
        continue;
      }
      rebuilding.delete(instance);
      if (status !== "200") {
        failed += 1;
        out(`search index of ${instance}: rebuild failed: ${body.error?.message}`);
      } else {
        rebuilt += 1;
        out(
          `search index of ${instance}: rebuilt from CHAT, ${body.messages} messages of ${body.threads} threads in ${body.seconds} s`,
        );
      }
      if (windowOver && rebuilding.size === 0) break;
    }
  } finally {
    clearTimeout(window);
    clearTimeout(limit);
    replies.unsubscribe();
  }
  for (const instance of rebuilding) {
    failed += 1;
    out(`search index of ${instance}: no report within ${REBUILD_MS / 60_000} minutes`);
  }
  return { rebuilt, failed };
}

/**
 * Why the replay ends in failure for its search part, or undefined when every search service
 * rebuilt its index. The outlines are rebuilt by then: only the indexes are to do again.
 */
export function searchNotRebuilt({ rebuilt, failed }: SearchRebuild): string | undefined {
  const again = "then run 'outline replay --all --search' again";
  if (rebuilt + failed === 0) {
    return `the outlines were rebuilt, but no search index was: no search service answered (none runs). Start one (npm start runs one when HISTORY_SEARCH=on), ${again}`;
  }
  if (failed === 0) return undefined;
  return `the outlines were rebuilt, but ${failed} of ${rebuilt + failed} search indexes ${failed === 1 ? "was" : "were"} not (the lines above say why); fix that, ${again}`;
}
