import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { findBinary } from "../services/start/processes.ts";

// `docker compose config` is how CI validates docker-compose.yml; the v1 `docker-compose` binary
// (Debian's package) reads the same file. Without either, there is nothing to run it with.
const composeV1 = findBinary("docker-compose");

describe.skipIf(composeV1 === undefined)("docker-compose.yml", () => {
  const config = (env: Record<string, string> = {}) =>
    execFileSync(composeV1 ?? "docker-compose", ["-f", "docker-compose.yml", "config"], {
      env: { ...process.env, ...env },
      encoding: "utf8",
    });

  it("is valid and runs NATS with JetStream, a volume and a healthcheck", () => {
    const text = config();
    expect(text).toMatch(/image: nats:2\.10-alpine/);
    expect(text).toMatch(/- -js\n/);
    expect(text).toMatch(/nats-data:\/data/);
    expect(text).toContain("http://127.0.0.1:8222/healthz");
    expect(text).toContain("SERVICE: thread-worker");
    expect(text).toContain("SERVICE: prompt-builder");
  });

  it("passes a setting from the environment to every service", () => {
    const text = config({ HISTORY_TAIL: "200,400" });
    expect(text.match(/HISTORY_TAIL: 200,400/g)).toHaveLength(3);
  });

  it("runs the search service in the search profile, its index in a volume", () => {
    const text = config({ HISTORY_SEARCH: "on" });
    const search = text.slice(text.indexOf("  search:"), text.indexOf("  thread-worker:"));
    expect(search).toContain("SERVICE: search");
    expect(search).toContain('HISTORY_SEARCH: "on"');
    expect(search).toMatch(/search-data:\/app\/\.data/);
    expect(search).toMatch(/profiles:\n\s+- search/);
  });

  it("passes OUTLINE_API_TOKEN to the prompt-builder (it listens on 0.0.0.0) and the worker's timings to the worker", () => {
    const text = config({ OUTLINE_API_TOKEN: "t".repeat(32), OUTLINE_IDLE_MS: "5000" });
    expect(text.match(/OUTLINE_API_TOKEN: t{32}/g)).toHaveLength(1);
    // `config` lists services by name: the token must sit in prompt-builder's block.
    const builder = text.slice(text.indexOf("  prompt-builder:"), text.indexOf("  thread-worker:"));
    expect(builder).toContain("OUTLINE_API_TOKEN: ttt");
    expect(text).toContain("OUTLINE_IDLE_MS: '5000'");
  });
});
