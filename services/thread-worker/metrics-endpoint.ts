import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { InfraNames } from "../config/names.ts";
import type { MeteredSummarizer } from "../summarizer/index.ts";
import type { Limiter } from "./limiter.ts";
import { errorText, type Logger } from "./log.ts";
import { METRIC, recordUsage, type MetricRegistry } from "./metrics.ts";
import type { ThreadRegistry } from "./registry.ts";

/** The subject the worker answers metrics requests on (Prometheus text). */
export const workerMetricsSubject = (names: InfraNames): string =>
  `${names.apiPrefix}.metrics.worker`;

/** Partitioned mode: every member answers here, each sample labelled `member="<id>"`. */
export const memberMetricsSubject = (names: InfraNames): string =>
  `${workerMetricsSubject(names)}.members`;

/** Prometheus text with `name="value"` added to every sample line. */
export function labelSamples(text: string, name: string, value: string): string {
  const label = `${name}="${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
  return text
    .split("\n")
    .map((line) => {
      if (line === "" || line.startsWith("#")) return line;
      const brace = line.indexOf("{");
      const space = line.indexOf(" ");
      if (brace >= 0 && brace < space)
        return `${line.slice(0, brace + 1)}${label},${line.slice(brace + 1)}`;
      return `${line.slice(0, space)}{${label}}${line.slice(space)}`;
    })
    .join("\n");
}

export interface MetricsEndpoint {
  /** The Prometheus text the metrics subject answers with. */
  readonly render: () => Promise<string>;
  /** Partitioned mode: answers on the members' subject too, as member `id`. */
  answerAsMember(id: string): void;
  stop(): void;
}

/**
 * Answers metrics requests: the worker's registry, with the consumer's lag read at each scrape,
 * then the process's own figures (heap, RSS, event-loop lag, GC: prom-client's defaults,
 * `outline_worker_` before each name), as the prompt-builder has them.
 */
export function serveMetrics(parts: {
  nc: NatsConnection;
  jsm: JetStreamManager;
  names: InfraNames;
  metrics: MetricRegistry;
  registry: ThreadRegistry;
  limiter: Limiter;
  summarizer: MeteredSummarizer;
  log: Logger;
}): MetricsEndpoint {
  const { nc, jsm, names, metrics, registry, log } = parts;
  // A registry of its own: a test process may run several workers.
  const processMetrics = new Registry();
  collectDefaultMetrics({ register: processMetrics, prefix: "outline_worker_" });
  const render = async (): Promise<string> => {
    try {
      const info = await jsm.consumers.info(names.chatStream, names.workerDurable);
      metrics.set(METRIC.lag, info.num_pending);
      metrics.set(METRIC.ackPending, info.num_ack_pending);
    } catch (err) {
      log.warn(`metrics: consumer info unavailable: ${errorText(err)}`);
    }
    metrics.set(METRIC.actors, registry.size);
    metrics.set(METRIC.intakeWaiting, registry.waiting);
    metrics.set(METRIC.inflight, parts.limiter.active);
    recordUsage(metrics, parts.summarizer.usage());
    return metrics.render() + (await processMetrics.metrics());
  };

  // A queue group: with several workers one of them answers each scrape.
  const subs: Subscription[] = [
    nc.subscribe(workerMetricsSubject(names), {
      queue: "outline-thread-worker",
      callback: (err, msg) => {
        if (err) return;
        void render().then(
          (text) => msg.respond(text),
          () => {},
        );
      },
    }),
  ];

  return {
    render,
    // Every member answers on `<subject>.members` too, its samples labelled with its member id,
    // so a scrape gathers all of them (metrics per member, docs/scale-out.md).
    answerAsMember(id) {
      subs.push(
        nc.subscribe(memberMetricsSubject(names), {
          callback: (err, msg) => {
            if (err) return;
            void render().then(
              (text) => msg.respond(labelSamples(text, "member", id)),
              () => {},
            );
          },
        }),
      );
    },
    stop() {
      for (const sub of subs) sub.unsubscribe();
    },
  };
}
