import type { UsageTotals } from "../summarizer/usage.ts";

type Labels = Record<string, string>;

interface Family {
  help: string;
  type: "counter" | "gauge";
  values: Map<string, { labels: Labels; value: number }>;
}

// Counters are bumped per event: no label or one label (the usual cases) skip the JSON.
const labelKey = (labels: Labels): string => {
  const keys = Object.keys(labels);
  if (keys.length === 0) return "";
  if (keys.length === 1) return `${keys[0]}\u0000${labels[keys[0] as string]}`;
  if (keys.length === 2) {
    // The usual pair (kind, source) per summary node: sorted by hand, no entries array or JSON.
    const [a, b] = (keys[0] as string) < (keys[1] as string) ? keys : [keys[1], keys[0]];
    return `${a}\u0000${labels[a as string]}\u0000${b}\u0000${labels[b as string]}`;
  }
  return JSON.stringify(Object.entries(labels).sort());
};

// Prometheus text format: label values escape backslash, quote and newline.
const escapeLabel = (value: string): string =>
  value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

function renderLabels(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return "";
  return `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
}

/**
 * A handful of counters and gauges in the Prometheus text format. Written here rather than taken
 * from prom-client: bumped per event, they need no registry or histograms. The process figures
 * are prom-client's defaults, rendered after these (metrics-endpoint.ts).
 */
export class MetricRegistry {
  #families = new Map<string, Family>();

  define(name: string, type: Family["type"], help: string): void {
    if (!this.#families.has(name)) this.#families.set(name, { help, type, values: new Map() });
  }

  #family(name: string): Family {
    const family = this.#families.get(name);
    if (!family) throw new Error(`metric ${name} is not defined; define it before use`);
    return family;
  }

  add(name: string, by = 1, labels: Labels = {}): void {
    const family = this.#family(name);
    const key = labelKey(labels);
    const current = family.values.get(key);
    if (current) current.value += by;
    else family.values.set(key, { labels, value: by });
  }

  set(name: string, value: number, labels: Labels = {}): void {
    this.#family(name).values.set(labelKey(labels), { labels, value });
  }

  get(name: string, labels: Labels = {}): number {
    return this.#family(name).values.get(labelKey(labels))?.value ?? 0;
  }

  render(): string {
    const out: string[] = [];
    for (const [name, family] of this.#families) {
      out.push(`# HELP ${name} ${family.help}`, `# TYPE ${name} ${family.type}`);
      for (const { labels, value } of family.values.values()) {
        out.push(`${name}${renderLabels(labels)} ${value}`);
      }
    }
    return `${out.join("\n")}\n`;
  }
}

/** The series the thread worker reports (scraped by the prompt-builder's /metrics). */
const SERIES = {
  events: {
    name: "outline_worker_events_applied_total",
    type: "counter",
    help: "Chat events applied to thread actors, by kind (message, deleted).",
  },
  duplicates: {
    name: "outline_worker_duplicates_total",
    type: "counter",
    help: "Chat events skipped as already applied, by why (seq, id).",
  },
  deadLetters: {
    name: "outline_worker_dead_letters_total",
    type: "counter",
    help: "Events recorded on the dead-letter subject instead of applied.",
  },
  summaries: {
    name: "outline_worker_summaries_total",
    type: "counter",
    help: "Summary nodes built, by kind (leaf, merge) and source (model, free, history: reused after a restart).",
  },
  summaryRetries: {
    name: "outline_worker_summarizer_retries_total",
    type: "counter",
    help: "Summarizer calls retried after a retryable error.",
  },
  summaryFailures: {
    name: "outline_worker_summarizer_failures_total",
    type: "counter",
    help: "Summarizer jobs failed back after a terminal error.",
  },
  tokens: {
    name: "outline_worker_summarizer_tokens_total",
    type: "counter",
    help: "Summarizer tokens, by type (input, cached, output).",
  },
  modelCalls: {
    name: "outline_worker_summarizer_calls_total",
    type: "counter",
    help: "Model calls made by the summarizer.",
  },
  summarizerCpu: {
    name: "outline_worker_summarizer_cpu_seconds_total",
    type: "counter",
    help: "CPU seconds the offline summarizer used in this process, its threads and the event loop.",
  },
  cuts: {
    name: "outline_worker_cuts_total",
    type: "counter",
    help: "Cuts applied (messages leaving the tail into the outline).",
  },
  batches: {
    name: "outline_worker_merge_batches_total",
    type: "counter",
    help: "Merge batches applied.",
  },
  merges: {
    name: "outline_worker_merges_total",
    type: "counter",
    help: "Pairs merged by merge batches.",
  },
  actors: { name: "outline_worker_actors", type: "gauge", help: "Thread actors in memory." },
  rehydrations: {
    name: "outline_worker_rehydrations_total",
    type: "counter",
    help: "Actors restored from their persisted state.",
  },
  passivations: {
    name: "outline_worker_passivations_total",
    type: "counter",
    help: "Idle actors persisted and stopped.",
  },
  capPassivations: {
    name: "outline_worker_cap_passivations_total",
    type: "counter",
    help: "Actors at rest persisted and stopped to make room under the actor cap (OUTLINE_MAX_ACTORS), least recently used first; included in passivations.",
  },
  actorCap: {
    name: "outline_worker_actor_cap",
    type: "gauge",
    help: "Thread actors in memory at most (OUTLINE_MAX_ACTORS; 0: no cap).",
  },
  intakeWaiting: {
    name: "outline_worker_intake_waiting_threads",
    type: "gauge",
    help: "Threads whose delivered events wait, unacknowledged, for an actor to make room under the cap.",
  },
  backlogHolds: {
    name: "outline_worker_backlog_holds_total",
    type: "counter",
    help: "Times a thread held new chat events because too many messages wait for summaries.",
  },
  stateSaves: {
    name: "outline_worker_state_saves_total",
    type: "counter",
    help: "Actor state writes to the actor bucket.",
  },
  snapshotWrites: {
    name: "outline_worker_snapshot_writes_total",
    type: "counter",
    help: "Outline snapshot writes to the snapshot bucket.",
  },
  threadErrors: {
    name: "outline_worker_thread_errors_total",
    type: "counter",
    help: "Unexpected errors that reset a thread's actor.",
  },
  gapFills: {
    name: "outline_worker_gap_events_total",
    type: "counter",
    help: "Events read from CHAT ahead of their redelivery, to keep order.",
  },
  gapReads: {
    name: "outline_worker_gap_reads_total",
    type: "counter",
    help: "Direct gets on CHAT looking for a gap before a delivered event.",
  },
  gapReadsSkipped: {
    name: "outline_worker_gap_reads_skipped_total",
    type: "counter",
    help: "Gap reads not needed: this worker saw every delivery of the consumer since the thread's cursor.",
  },
  lag: {
    name: "outline_worker_consumer_pending",
    type: "gauge",
    help: "Chat events not yet delivered to a worker (consumer num_pending).",
  },
  ackPending: {
    name: "outline_worker_consumer_ack_pending",
    type: "gauge",
    help: "Chat events delivered and not yet acknowledged.",
  },
  inflight: {
    name: "outline_worker_summarizer_inflight",
    type: "gauge",
    help: "Summarizer calls in flight in this process.",
  },
} as const satisfies Record<string, { name: string; type: Family["type"]; help: string }>;

/** Each series' metric name, by the key the worker uses. */
export const METRIC = Object.fromEntries(
  Object.entries(SERIES).map(([key, { name }]) => [key, name]),
) as { [K in keyof typeof SERIES]: (typeof SERIES)[K]["name"] };

export function workerMetrics(): MetricRegistry {
  const r = new MetricRegistry();
  for (const { name, type, help } of Object.values(SERIES)) r.define(name, type, help);
  return r;
}

/** Copies the summarizer's running totals into the registry (they are totals, not deltas). */
export function recordUsage(r: MetricRegistry, usage: UsageTotals): void {
  r.set(METRIC.tokens, usage.inputTokens, { type: "input" });
  r.set(METRIC.tokens, usage.cachedTokens, { type: "cached" });
  r.set(METRIC.tokens, usage.outputTokens, { type: "output" });
  r.set(METRIC.modelCalls, usage.calls);
  if (usage.cpuMs !== undefined) r.set(METRIC.summarizerCpu, usage.cpuMs / 1_000);
}
