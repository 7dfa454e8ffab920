import type { NatsConnection } from "@nats-io/transport-node";
import type { WorkerJoin } from "../cluster/instance.ts";
import { redactUrl } from "../nats/connect.ts";

export interface HealthReport {
  ok: boolean;
  nats: { connected: boolean; server: string; rttMs?: number; error?: string };
  /** Under `npm start`: whether this instance's worker joined (reads its share of the threads). */
  worker?: WorkerJoin;
}

export interface Health {
  check(): Promise<HealthReport>;
}

/**
 * Healthy means NATS answers a round trip now: while the client reconnects, requests would
 * only queue, so a load balancer should send traffic elsewhere.
 */
export function natsHealth(nc: NatsConnection, timeoutMs = 1_000): Health {
  return {
    async check() {
      const server = redactUrl(nc.getServer());
      if (nc.isClosed()) {
        return { ok: false, nats: { connected: false, server, error: "connection closed" } };
      }
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        const rttMs = await Promise.race([nc.rtt(), timeout]);
        return {
          ok: true,
          nats: { connected: true, server, rttMs: Math.round(rttMs * 1000) / 1000 },
        };
      } catch (err) {
        return { ok: false, nats: { connected: false, server, error: (err as Error).message } };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * An instance's health (`npm start`: a worker beside this prompt-builder): NATS as above, and
 * not healthy until its worker answers that it joined, so "running" means the instance reads
 * its share. Once it has, the worker is not asked again: a busy worker answers late under load,
 * and a worker that dies stops its whole instance.
 */
export function instanceHealth(nats: Health, askWorker: () => Promise<WorkerJoin>): Health {
  let joined: WorkerJoin | undefined;
  return {
    async check() {
      const [report, worker] = await Promise.all([nats.check(), joined ?? askWorker()]);
      if (worker.joined) joined = worker;
      return { ...report, ok: report.ok && worker.joined, worker };
    },
  };
}
