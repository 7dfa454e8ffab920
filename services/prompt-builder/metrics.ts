import type { NatsConnection } from "@nats-io/transport-node";
import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";
import type { NewerReadPath } from "../nats/reader.ts";

export type Transport = "http" | "nats";

/** The prompt-builder's own metrics, and the worker's fetched over NATS for one /metrics page. */
export interface ApiMetrics {
  /** Records one answered request: which operation, over what, with which status. */
  observe(op: string, transport: Transport, status: number, seconds: number): void;
  /** One prompt body: served as kept (hit) or built (miss); the operations' `onPromptCache`. */
  promptCache(hit: boolean): void;
  /** One read of messages newer than a snapshot, and how many it read; the reader's `onNewerRead`. */
  newerRead(path: NewerReadPath, messages: number): void;
  /** Prometheus text: ours, then the worker's when one answers. */
  render(): Promise<string>;
}

export interface MetricsOptions {
  /** `<apiPrefix>.metrics.worker`: the worker answers it with its Prometheus text. */
  workerSubject: string;
  /** How long to wait for the worker; a scrape must not hang on a stopped worker. */
  workerTimeoutMs?: number;
}

export function createMetrics(nc: NatsConnection, options: MetricsOptions): ApiMetrics {
  // A registry of our own, not the global one: tests and the CLI may create several.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "outline_prompt_builder_" });
  const requests = new Counter({
    name: "outline_api_requests_total",
    help: "Requests answered by the prompt-builder, by operation, transport and status",
    labelNames: ["op", "transport", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "outline_api_request_seconds",
    help: "Time to answer a request, by operation and transport",
    labelNames: ["op", "transport"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });

  const promptCache = new Counter({
    name: "outline_prompt_cache_total",
    help: "Prompt bodies served as kept (result=hit: snapshot and newest message unchanged) or built (result=miss)",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const newerReads = new Counter({
    name: "outline_prompt_newer_reads_total",
    help: "Reads of a thread's messages newer than its snapshot, by path: direct gets alone, or a consumer past the bound",
    labelNames: ["path"] as const,
    registers: [registry],
  });
  const newerMessages = new Counter({
    name: "outline_prompt_newer_messages_total",
    help: "Stored messages newer than a snapshot read for prompts, by the path of their read",
    labelNames: ["path"] as const,
    registers: [registry],
  });
  // Both series of each label exist from the start (0), so a rate is defined before the first.
  for (const result of ["hit", "miss"]) promptCache.inc({ result }, 0);
  for (const path of ["direct", "consumer"]) {
    newerReads.inc({ path }, 0);
    newerMessages.inc({ path }, 0);
  }

  async function workerText(): Promise<string> {
    try {
      // Partitioned, every member answers on `.members` with its samples labelled: all of them.
      const members: string[] = [];
      try {
        const answers = await nc.requestMany(`${options.workerSubject}.members`, undefined, {
          strategy: "timer",
          maxWait: Math.min(300, options.workerTimeoutMs ?? 1_000),
        });
        for await (const m of answers) if (m.data.length > 0) members.push(m.string());
      } catch {
        // No partitioned worker answers (single mode): the queue group below.
      }
      if (members.length > 0) return members.map((t) => (t.endsWith("\n") ? t : `${t}\n`)).join("");
      const reply = await nc.request(options.workerSubject, undefined, {
        timeout: options.workerTimeoutMs ?? 1_000,
      });
      const text = reply.string();
      return text.endsWith("\n") ? text : `${text}\n`;
    } catch (err) {
      // No worker running (or too slow) is normal while it restarts: say so in a comment.
      const reason = (err as Error).message.replace(/\s+/g, " ");
      return `# worker metrics unavailable on ${options.workerSubject}: ${reason}\n`;
    }
  }

  return {
    observe(op, transport, status, seconds) {
      requests.inc({ op, transport, status: String(status) });
      latency.observe({ op, transport }, seconds);
    },
    promptCache(hit) {
      promptCache.inc({ result: hit ? "hit" : "miss" });
    },
    newerRead(path, messages) {
      newerReads.inc({ path });
      newerMessages.inc({ path }, messages);
    },
    async render() {
      const [ours, worker] = await Promise.all([registry.metrics(), workerText()]);
      return `${ours.endsWith("\n") ? ours : `${ours}\n`}${worker}`;
    },
  };
}

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;
