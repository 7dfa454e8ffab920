import {
  DiscardPolicy,
  jetstream,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
  type StreamInfo,
} from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { NAME_VARIABLES, type InfraNames } from "../config/names.ts";
import {
  streamDifferences,
  subjectCovers,
  topologyError,
  TopologyError,
  type StreamNeeds,
} from "./stream-check.ts";
import { ENABLE_JETSTREAM } from "./jetstream-off.ts";
import { purgeBySubjectIsSafe } from "./erase.ts";
import { isTransientAtStart, startupStep } from "./startup-step.ts";
import { isTransient } from "./transient.ts";
import { subjects } from "./subjects.ts";

export { publishDeadLetter, DEAD_LETTER_HEADERS, type DeadLetter } from "./dead-letter.ts";
export { subjects, type Subjects, type ChatEventKind } from "./subjects.ts";
export { TopologyError } from "./stream-check.ts";

export interface TopologyOptions {
  /** Copies of each stream kept by a cluster; applies only to streams created now. */
  replicas?: number;
  /** Told when a request is asked again (another instance making the same stream). */
  log?: (line: string) => void;
}

export interface Topology {
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** The snapshot bucket, one key per thread. */
  kv: KV;
}

// The platform publishes each message with Nats-Msg-Id = its id; two minutes absorbs a publisher's
// retries. Beyond it the actor itself recognises an id it has applied.
const DUPLICATE_WINDOW_MS = 2 * 60_000;
/** How long a stream or bucket creation may take (R3 on a busy cluster takes seconds). */
const TOPOLOGY_TIMEOUT_MS = 20_000;

type Plan = {
  needs: StreamNeeds;
  config: Partial<StreamConfig> & { name: string };
  /** Subjects added in place to an existing stream that lacks them (the one change we make). */
  upgrade?: readonly string[];
};

function plans(names: InfraNames, replicas: number, deletesOneByOne: boolean): Plan[] {
  const s = subjects(names);
  // Limits retention with no limit at all: every message stays reachable by sequence for as long
  // as its thread lives (SPEC §6); only thread.deleted removes anything, by purge.
  const keepAll = {
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_age: 0,
    max_msgs: -1,
    max_bytes: -1,
    max_msgs_per_subject: -1,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    num_replicas: replicas,
  };
  return [
    {
      needs: {
        name: names.chatStream,
        variable: NAME_VARIABLES.chatStream,
        subjects: s.chatStreamSubjects,
        keepsEverything: true,
        purges: true,
        deletesOneByOne,
        direct: true,
        rollup: false,
      },
      config: {
        ...keepAll,
        name: names.chatStream,
        description:
          "Chat events in: message.created and thread.deleted per thread (README.md, The contract)",
        subjects: [...s.chatStreamSubjects],
        allow_direct: true,
      },
      // Partitioned: a stream made for one instance also captures what the server's mapping
      // stores (docs/scale-out.md, "Upgrading an existing CHAT stream").
      ...(names.partitions === undefined ? {} : { upgrade: s.chatStreamSubjects.slice(2) }),
    },
    {
      needs: {
        name: names.historyStream,
        variable: NAME_VARIABLES.historyStream,
        subjects: s.historyStreamSubjects,
        keepsEverything: true,
        purges: true,
        deletesOneByOne,
        direct: true,
        rollup: false,
      },
      config: {
        ...keepAll,
        name: names.historyStream,
        description:
          "Summary nodes built by the thread actors, <prefix>.<thread>.<level>.<index>, so a replay needs no model",
        subjects: [...s.historyStreamSubjects],
        // A node is read by last-by-subject in one direct get.
        allow_direct: true,
      },
    },
    {
      needs: {
        name: names.deadStream,
        variable: NAME_VARIABLES.deadStream,
        subjects: s.deadStreamSubjects,
        keepsEverything: false,
        // thread.deleted purges `<dead>.<thread>`, always by subject (eraser.ts says why).
        purges: true,
        direct: false,
        rollup: false,
      },
      config: {
        ...keepAll,
        name: names.deadStream,
        description:
          "Events outline did not apply, on <dead>.<thread> (or <dead> alone, before): original bytes, reason in headers",
        subjects: [...s.deadStreamSubjects],
      },
      // A stream made by a version with one subject for all letters gets `<dead>.>` added in
      // place: its letters stay where they are, still listed, and the new ones go beside them.
      upgrade: s.deadStreamSubjects,
    },
  ];
}

function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

async function existing(jsm: JetStreamManager, name: string): Promise<StreamInfo | undefined> {
  try {
    return await jsm.streams.info(name);
  } catch (err) {
    if (isStreamNotFound(err)) return undefined;
    throw err;
  }
}

// The server's "subjects overlap with an existing stream" does not say which stream; we do.
async function explainAddFailure(jsm: JetStreamManager, plan: Plan, err: unknown): Promise<Error> {
  const message = err instanceof Error ? err.message : String(err);
  if (/overlap/i.test(message)) {
    const owners = new Set<string>();
    for (const subject of plan.config.subjects ?? []) {
      for await (const name of jsm.streams.names(subject)) owners.add(name);
    }
    const list = [...owners].join(", ") || "another stream";
    return new TopologyError(
      `cannot create stream ${plan.needs.name} (${plan.needs.variable}): its subjects ` +
        `[${(plan.config.subjects ?? []).join(", ")}] are already captured by stream ${list}. ` +
        `Set ${plan.needs.variable} to that stream's name if it should be used as is, or change the subject prefix ` +
        `(${NAME_VARIABLES.chatPrefix}, ${NAME_VARIABLES.historyPrefix}, ${NAME_VARIABLES.deadSubject}).`,
      { cause: err },
    );
  }
  return new TopologyError(
    `cannot create stream ${plan.needs.name} (${plan.needs.variable}): ${message}; check the server's JetStream limits and the account's permissions`,
    { cause: err },
  );
}

/**
 * Creates a stream, or finds the one another process starting at the same moment created. Its
 * requests are asked again while they meet that create (a stream without its first leader yet
 * answers nothing) or an R3 create slower than the request's timeout.
 */
async function createStream(
  jsm: JetStreamManager,
  plan: Plan,
  step: <T>(what: string, fn: () => Promise<T>) => Promise<T>,
): Promise<StreamInfo> {
  const name = plan.needs.name;
  return step(`creating stream ${name} (R${plan.config.num_replicas ?? 1})`, async () => {
    try {
      return await jsm.streams.add(plan.config);
    } catch (err) {
      // Found: made by another process, or by our own request whose answer was late.
      // A read that fails as well is asked again with the create, or thrown.
      const found = await existing(jsm, name);
      if (found) return found;
      if (isTransientAtStart(err)) throw err;
      throw await explainAddFailure(jsm, plan, err);
    }
  });
}

async function ensureStream(
  jsm: JetStreamManager,
  plan: Plan,
  step: <T>(what: string, fn: () => Promise<T>) => Promise<T>,
): Promise<void> {
  const name = plan.needs.name;
  let info =
    (await step(`reading stream ${name}`, () => existing(jsm, name))) ??
    (await createStream(jsm, plan, step));
  const have = info.config.subjects ?? [];
  const add = (plan.upgrade ?? []).filter((want) => !have.some((p) => subjectCovers(p, want)));
  if (add.length > 0) {
    try {
      info = await jsm.streams.update(name, {
        ...info.config,
        subjects: [...have, ...add],
      });
    } catch (err) {
      // Another instance may have added them a moment ago.
      const again = await step(`reading stream ${name}`, () => existing(jsm, name));
      if (!again) throw err;
      info = again;
    }
  }
  const diffs = streamDifferences(plan.needs, info.config);
  if (diffs.length > 0) throw topologyError(plan.needs, diffs);
}

async function ensureBucket(
  jsm: JetStreamManager,
  js: JetStreamClient,
  names: InfraNames,
  replicas: number,
  deletesOneByOne: boolean,
  step: <T>(what: string, fn: () => Promise<T>) => Promise<T>,
): Promise<KV> {
  const stream = `KV_${names.kvBucket}`;
  const needs: StreamNeeds = {
    name: stream,
    variable: NAME_VARIABLES.kvBucket,
    subjects: [`$KV.${names.kvBucket}.>`],
    keepsEverything: false,
    purges: true,
    deletesOneByOne,
    direct: false,
    rollup: true,
  };
  const info = await step(`reading stream ${stream}`, () => existing(jsm, stream));
  if (info !== undefined) {
    const diffs = streamDifferences(needs, info.config);
    if (diffs.length > 0) throw topologyError(needs, diffs);
  }
  // Opens an existing bucket as it is; creates it otherwise (asked again, it finds the one
  // another instance made). History 1: only the latest snapshot matters, older ones are rebuilt
  // from the streams.
  return step(`creating bucket ${names.kvBucket} (stream ${stream}, R${replicas})`, () =>
    new Kvm(js).create(names.kvBucket, {
      history: 1,
      storage: StorageType.File,
      replicas,
      description: "Latest outline snapshot per thread (README.md, The contract)",
    }),
  );
}

/**
 * Creates the streams and bucket outline needs, or checks the existing ones. The one change made
 * to an existing stream is adding subjects a newer version needs (DEAD's `<dead>.>`; CHAT's
 * partition form): nothing stored is touched. Safe to call from every process at every start.
 */
export async function ensureTopology(
  nc: NatsConnection,
  names: InfraNames,
  options: TopologyOptions = {},
): Promise<Topology> {
  const replicas = options.replicas ?? 1;
  let jsm: JetStreamManager;
  try {
    // Creating R3 streams is a Raft write on every node: slow on a loaded cluster.
    // Asked again while the cluster elects its meta leader; JetStream off is not.
    jsm = await startupStep(
      "reading the JetStream account",
      () => jetstreamManager(nc, { timeout: TOPOLOGY_TIMEOUT_MS }),
      { transient: isTransient, ...(options.log ? { log: options.log } : {}) },
    );
  } catch (err) {
    throw new TopologyError(
      `JetStream is not available on ${nc.getServer()} (NATS_URL): ${(err as Error).message}; ${ENABLE_JETSTREAM}`,
      { cause: err },
    );
  }
  const deletesOneByOne = !purgeBySubjectIsSafe(nc.info?.version);
  const step = <T>(what: string, fn: () => Promise<T>) =>
    startupStep(what, fn, options.log ? { log: options.log } : {});
  for (const plan of plans(names, replicas, deletesOneByOne)) await ensureStream(jsm, plan, step);
  const js = jetstream(nc, { timeout: TOPOLOGY_TIMEOUT_MS });
  const kv = await ensureBucket(jsm, js, names, replicas, deletesOneByOne, step);
  return { js, jsm, kv };
}
