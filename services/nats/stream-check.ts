import { RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";

/** What outline relies on in a stream it did not necessarily create itself. */
export interface StreamNeeds {
  /** The stream's name and the variable that sets it, for the error message. */
  name: string;
  variable: string;
  /** Subjects the stream must capture (wildcards allowed). */
  subjects: readonly string[];
  /** Every message must stay (SPEC §6: any message reachable for as long as its thread lives). */
  keepsEverything: boolean;
  /** thread.deleted purges subjects. */
  purges: boolean;
  /** ... and does it message by message (nats-server < 2.10, see erase.ts), so deletes must be allowed. */
  deletesOneByOne?: boolean;
  /** Nodes and messages are read with one direct get. */
  direct: boolean;
  /** KV purge writes a rollup marker. */
  rollup: boolean;
}

/** A stream on the server has a configuration outline cannot work with. */
export class TopologyError extends Error {
  override readonly name = "TopologyError";
  readonly code = "TOPOLOGY_MISMATCH";
}

/**
 * True when `pattern` (a stream subject, possibly wildcarded) captures every subject `subject`
 * can stand for. `*` captures one token (and a `*` in `subject`), `>` the rest.
 */
export function subjectCovers(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (const [i, pt] of p.entries()) {
    if (pt === ">") return i < s.length;
    const st = s[i];
    if (st === undefined || st === ">") return false;
    if (pt !== "*" && (st === "*" || pt !== st)) return false;
  }
  return p.length === s.length;
}

const unlimited = (n: number | undefined): boolean => n === undefined || n <= 0;

/** Lists, in words, how `existing` falls short of `needs`; empty when it is usable as is. */
export function streamDifferences(needs: StreamNeeds, existing: Partial<StreamConfig>): string[] {
  const diffs: string[] = [];
  const edit = `nats stream edit ${needs.name}`;
  const have = existing.subjects ?? [];
  const missing = needs.subjects.filter((want) => !have.some((p) => subjectCovers(p, want)));
  if (missing.length > 0) {
    diffs.push(
      `its subjects [${have.join(", ")}] do not capture ${missing.join(", ")} (add them with '${edit} --subjects ...')`,
    );
  }
  if (existing.mirror) {
    diffs.push(`it is a mirror of ${existing.mirror.name}, which cannot take our publishes`);
  }
  if (existing.storage !== undefined && existing.storage !== StorageType.File) {
    diffs.push(
      `its storage is ${existing.storage}, but outline needs file storage so events survive a restart`,
    );
  }
  if (existing.sealed) diffs.push("it is sealed, so nothing can be added or purged");
  if (needs.keepsEverything) {
    if (existing.retention !== undefined && existing.retention !== RetentionPolicy.Limits) {
      diffs.push(
        `its retention is ${existing.retention}, which removes messages once consumed; outline needs 'limits' so every message stays readable`,
      );
    }
    const limits: [string, number | undefined, string][] = [
      ["max_age", existing.max_age, "--max-age=0"],
      ["max_msgs", existing.max_msgs, "--max-msgs=-1"],
      ["max_bytes", existing.max_bytes, "--max-bytes=-1"],
      ["max_msgs_per_subject", existing.max_msgs_per_subject, "--max-msgs-per-subject=-1"],
    ];
    for (const [field, value, flag] of limits) {
      if (!unlimited(value)) {
        diffs.push(
          `${field} is ${value}, which would drop old messages outline must keep (set it unlimited: '${edit} ${flag}')`,
        );
      }
    }
  }
  if (needs.purges && existing.deny_purge) {
    diffs.push("deny_purge is set, so thread.deleted cannot erase a thread (it cannot be unset)");
  }
  if (needs.purges && needs.deletesOneByOne && existing.deny_delete) {
    diffs.push(
      "deny_delete is set, so thread.deleted cannot erase a thread: on nats-server before 2.10 it deletes message by message (it cannot be unset; or upgrade the server to 2.10 or later)",
    );
  }
  if (needs.direct && existing.allow_direct === false) {
    diffs.push(
      `allow_direct is off, so reads take the slow path (enable: '${edit} --allow-direct')`,
    );
  }
  if (needs.rollup && existing.allow_rollup_hdrs === false) {
    diffs.push(
      `allow_rollup_hdrs is off, so a key cannot be purged (enable: '${edit} --allow-rollup')`,
    );
  }
  return diffs;
}

/** The startup error for an unusable existing stream: what differs and the ways out. */
export function topologyError(needs: StreamNeeds, diffs: readonly string[]): TopologyError {
  return new TopologyError(
    `stream ${needs.name} (${needs.variable}) already exists with a configuration outline cannot use: ` +
      `${diffs.join("; ")}. outline never changes an existing stream; fix it as suggested, or delete it ` +
      `('nats stream rm ${needs.name}', which erases its messages), or set ${needs.variable} to another name.`,
  );
}
