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
 * from prom-client: the worker needs a dozen series answered over NATS, not a registry,
 * histograms or default process metrics.
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
export const METRIC = {
  events: "outline_worker_events_applied_total",
  duplicates: "outline_worker_duplicates_total",
  deadLetters: "outline_worker_dead_letters_total",
  summaries: "outline_worker_summaries_total",
  summaryRetries: "outline_worker_summarizer_retries_total",
  summaryFailures: "outline_worker_summarizer_failures_total",
  tokens: "outline_worker_summarizer_tokens_total",
  modelCalls: "outline_worker_summarizer_calls_total",
  summarizerCpu: "outline_worker_summarizer_cpu_seconds_total",
  cuts: "outline_worker_cuts_total",
  batches: "outline_worker_merge_batches_total",
  merges: "outline_worker_merges_total",
  actors: "outline_worker_actors",
  rehydrations: "outline_worker_rehydrations_total",
  passivations: "outline_worker_passivations_total",
  backlogHolds: "outline_worker_backlog_holds_total",
  stateSaves: "outline_worker_state_saves_total",
  snapshotWrites: "outline_worker_snapshot_writes_total",
  threadErrors: "outline_worker_thread_errors_total",
  gapFills: "outline_worker_gap_events_total",
  gapReads: "outline_worker_gap_reads_total",
  gapReadsSkipped: "outline_worker_gap_reads_skipped_total",
  lag: "outline_worker_consumer_pending",
  ackPending: "outline_worker_consumer_ack_pending",
  inflight: "outline_worker_summarizer_inflight",
} as const;

export function workerMetrics(): MetricRegistry {
  const r = new MetricRegistry();
  r.define(
    METRIC.events,
    "counter",
    "Chat events applied to thread actors, by kind (message, deleted).",
  );
  r.define(
    METRIC.duplicates,
    "counter",
    "Chat events skipped as already applied, by why (seq, id).",
  );
  r.define(
    METRIC.deadLetters,
    "counter",
    "Events recorded on the dead-letter subject instead of applied.",
  );
  r.define(
    METRIC.summaries,
    "counter",
    "Summary nodes built, by kind (leaf, merge) and source (model, free, history: reused after a restart).",
  );
  r.define(METRIC.summaryRetries, "counter", "Summarizer calls retried after a retryable error.");
  r.define(
    METRIC.summaryFailures,
    "counter",
    "Summarizer jobs failed back after a terminal error.",
  );
  r.define(METRIC.tokens, "counter", "Summarizer tokens, by type (input, cached, output).");
  r.define(METRIC.modelCalls, "counter", "Model calls made by the summarizer.");
  r.define(
    METRIC.summarizerCpu,
    "counter",
    "CPU seconds the offline summarizer used in this process, its threads and the event loop.",
  );
  r.define(METRIC.cuts, "counter", "Cuts applied (messages leaving the tail into the outline).");
  r.define(METRIC.batches, "counter", "Merge batches applied.");
  r.define(METRIC.merges, "counter", "Pairs merged by merge batches.");
  r.define(METRIC.actors, "gauge", "Thread actors in memory.");
  r.define(METRIC.rehydrations, "counter", "Actors restored from their persisted state.");
  r.define(METRIC.passivations, "counter", "Idle actors persisted and stopped.");
  r.define(
    METRIC.backlogHolds,
    "counter",
    "Times a thread held new chat events because too many messages wait for summaries.",
  );
  r.define(METRIC.stateSaves, "counter", "Actor state writes to the actor bucket.");
  r.define(METRIC.snapshotWrites, "counter", "Outline snapshot writes to the snapshot bucket.");
  r.define(METRIC.threadErrors, "counter", "Unexpected errors that reset a thread's actor.");
  r.define(
    METRIC.gapFills,
    "counter",
    "Events read from CHAT ahead of their redelivery, to keep order.",
  );
  r.define(
    METRIC.gapReads,
    "counter",
    "Direct gets on CHAT looking for a gap before a delivered event.",
  );
  r.define(
    METRIC.gapReadsSkipped,
    "counter",
    "Gap reads not needed: this worker saw every delivery of the consumer since the thread's cursor.",
  );
  r.define(
    METRIC.lag,
    "gauge",
    "Chat events not yet delivered to a worker (consumer num_pending).",
  );
  r.define(METRIC.ackPending, "gauge", "Chat events delivered and not yet acknowledged.");
  r.define(METRIC.inflight, "gauge", "Summarizer calls in flight in this process.");
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
