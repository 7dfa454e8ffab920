import { headers, type NatsConnection } from "@nats-io/transport-node";
import { SettingsError } from "../../shared/errors.ts";
import { PARTITION_PROBES, partitionCountOf } from "../../shared/ownership.ts";
import { MAX_PARTITIONS, PARTITIONS_VARIABLE, type InfraNames } from "../config/names.ts";

/** What the server does with `<chat>.<thread>.message.created`. */
export type ChatMapping =
  { kind: "mapped"; partitions: number } | { kind: "plain" } | { kind: "unknown"; why: string };

// A stream name no stream has: JetStream refuses to store a message that expects another
// stream, so a probe is seen by our subscription and stored nowhere.
const NO_STREAM = "outline-partition-probe-stores-nothing";

/**
 * Asks the server how it maps chat subjects: a core publish of each PARTITION_PROBES token,
 * which its `{{partition(N,1)}}` mapping (docs/scale-out.md) stores with a partition token, and
 * our own subscription on `<chat>.<probe>.>` sees as stored. The flush's answer comes after our
 * own deliveries, so no timer decides. A user not allowed to publish or subscribe there sees
 * nothing: `unknown`.
 */
export async function probeChatMapping(
  nc: NatsConnection,
  chatPrefix: string,
): Promise<ChatMapping> {
  const seen = new Map<string, number>();
  let plain = false;
  const tokens = chatPrefix.split(".").length;
  const subs = PARTITION_PROBES.map((probe) =>
    nc.subscribe(`${chatPrefix}.${probe}.>`, {
      callback: (err, msg) => {
        if (err) return;
        const parts = msg.subject.split(".").slice(tokens + 1);
        if (parts.length === 2) plain = true;
        const k = parts.length === 3 ? Number(parts[2]) : NaN;
        if (Number.isInteger(k)) seen.set(probe, k);
      },
    }),
  );
  try {
    const h = headers();
    h.set("Nats-Expected-Stream", NO_STREAM);
    for (const probe of PARTITION_PROBES)
      nc.publish(`${chatPrefix}.${probe}.message.created`, "", { headers: h });
    await nc.flush();
  } finally {
    for (const sub of subs) sub.unsubscribe();
  }
  if (plain) return { kind: "plain" };
  if (seen.size < PARTITION_PROBES.length)
    return {
      kind: "unknown",
      why: `${seen.size} of ${PARTITION_PROBES.length} probes came back (may this user publish and subscribe on ${chatPrefix}.>?)`,
    };
  const partitions = partitionCountOf(seen, MAX_PARTITIONS);
  return partitions === undefined
    ? { kind: "unknown", why: `the server maps ${chatPrefix} subjects, but not by partition(N,1)` }
    : { kind: "mapped", partitions };
}

/**
 * The names with `partitions` as the server maps them when OUTLINE_PARTITIONS is unset (SPEC §3:
 * set by the server's mapping); a count set that differs from the mapping's is refused. `note`
 * says what was found, for the service's log.
 */
export async function withServerPartitions(
  nc: NatsConnection,
  names: InfraNames,
): Promise<{ names: InfraNames; note?: string }> {
  const mapping = await probeChatMapping(nc, names.chatPrefix);
  const set = names.partitions;
  if (set === undefined) {
    if (mapping.kind !== "mapped") return { names };
    return {
      names: { ...names, partitions: mapping.partitions },
      note: `partitioned mode: the server maps ${names.chatPrefix} subjects onto ${mapping.partitions} partitions (${PARTITIONS_VARIABLE} unset)`,
    };
  }
  if (mapping.kind === "mapped" && mapping.partitions !== set) {
    throw new SettingsError(
      PARTITIONS_VARIABLE,
      `${set} does not match the server, whose mapping stores ${names.chatPrefix} subjects in ${mapping.partitions} partitions; set ${PARTITIONS_VARIABLE}=${mapping.partitions} or leave it unset (docs/scale-out.md)`,
    );
  }
  if (mapping.kind === "plain") {
    return {
      names,
      note: `${PARTITIONS_VARIABLE}=${set}, but the server does not map ${names.chatPrefix} subjects: new events keep the old form, read only by the holder of partition 0 (add the mapping, docs/scale-out.md)`,
    };
  }
  return { names };
}
