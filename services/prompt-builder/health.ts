import type { NatsConnection } from "@nats-io/transport-node";
import { redactUrl } from "../nats/connect.ts";

export interface HealthReport {
  ok: boolean;
  nats: { connected: boolean; server: string; rttMs?: number; error?: string };
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
