import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { findBinary } from "../services/util/processes.ts";

/**
 * What validates docker-compose.yml without an engine: `docker compose` (v2, the plugin) when
 * `docker` has it, else the v1 `docker-compose` binary (Debian's package). Both read the file the
 * same; their `config` output differs in quoting and in how it writes volumes.
 */
function composeCommand(): string[] | undefined {
  const docker = findBinary("docker");
  if (docker && spawnSync(docker, ["compose", "version"], { stdio: "ignore" }).status === 0) {
    return [docker, "compose"];
  }
  const v1 = findBinary("docker-compose");
  return v1 === undefined ? undefined : [v1];
}

const compose = composeCommand();
// CI installs docker-compose (.ci/run): there a missing one is a failure, never a silent skip.
const required = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "0";

describe("docker compose is there to validate docker-compose.yml", () => {
  it.runIf(required)("in CI: `docker compose` or `docker-compose` is on PATH", () => {
    expect(
      compose,
      "neither `docker compose` nor `docker-compose` is on PATH; .ci/run installs Debian's docker-compose",
    ).toBeDefined();
  });
});

describe.skipIf(compose === undefined)("docker-compose.yml", () => {
  const config = (env: Record<string, string> = {}, profile?: string) => {
    const [bin = "docker-compose", ...pre] = compose ?? [];
    const args = [...pre, ...(profile ? ["--profile", profile] : []), "-f", "docker-compose.yml"];
    return execFileSync(bin, [...args, "config"], {
      env: { ...process.env, ...env },
      encoding: "utf8",
    });
  };
  // v1 writes `nats-data:/data:rw`; v2 a long form with `source:` and `target:` lines.
  const volume = (name: string, target: string) =>
    new RegExp(
      `${name}:${target.replace(/\//g, "\\/")}|source: ${name}\\n\\s+target: ${target.replace(/\//g, "\\/")}`,
    );
  // v1 quotes a number-like value with single quotes, v2 with double ones.
  const setting = (name: string, value: string) => new RegExp(`${name}: ['"]?${value}['"]?\\n`);

  it("is valid and runs NATS with JetStream, a volume and a healthcheck", () => {
    const text = config();
    expect(text).toMatch(/image: nats:2\.10-alpine/);
    expect(text).toMatch(/- -js\n/);
    expect(text).toMatch(volume("nats-data", "/data"));
    expect(text).toContain("http://127.0.0.1:8222/healthz");
    expect(text).toContain("SERVICE: thread-worker");
    expect(text).toContain("SERVICE: prompt-builder");
  });

  it("passes a setting from the environment to every service", () => {
    const text = config({ HISTORY_TAIL: "200,400" });
    // docker-compose v1 lists the services of every profile: each of ours gets it.
    const ours = (text.match(/SERVICE: /g) ?? []).length;
    expect(ours).toBeGreaterThanOrEqual(3);
    expect(text.match(/HISTORY_TAIL: 200,400/g)).toHaveLength(ours);
  });

  it("runs the search service in the search profile, its index in a volume", () => {
    const text = config({ HISTORY_SEARCH: "on" }, "search");
    const search = text.slice(text.indexOf("  search:"), text.indexOf("  thread-worker:"));
    expect(search).toContain("SERVICE: search");
    expect(search).toMatch(setting("HISTORY_SEARCH", "on"));
    expect(search).toMatch(volume("search-data", "/app/.data"));
    expect(search).toMatch(/profiles:\n\s+- search/);
  });

  it("runs 3 NATS nodes, 2 partitioned workers and 2 prompt-builders in the cluster profile", () => {
    const text = config({}, "cluster");
    for (const n of [1, 2, 3]) expect(text).toContain(`  cluster-nats-${n}:`);
    expect(
      text.match(
        /nats:\/\/cluster-nats-1:6222,nats:\/\/cluster-nats-2:6222,nats:\/\/cluster-nats-3:6222/g,
      ),
    ).toHaveLength(3);
    expect(text).toContain("/etc/nats/cluster.conf");
    for (const name of [
      "cluster-worker-1",
      "cluster-worker-2",
      "cluster-builder-1",
      "cluster-builder-2",
    ])
      expect(text).toContain(`  ${name}:`);
    expect(
      text.match(
        /NATS_URL: nats:\/\/cluster-nats-1:4222,nats:\/\/cluster-nats-2:4222,nats:\/\/cluster-nats-3:4222/g,
      ),
    ).toHaveLength(4);
    expect(text.match(setting("OUTLINE_PARTITIONS", "32"))).not.toBeNull();
    expect(text.match(/OUTLINE_PARTITIONS: ['"]?32/g)).toHaveLength(4);
    expect(text.match(/OUTLINE_REPLICAS: ['"]?3/g)).toHaveLength(4);
    // The mapping's N is the instances' OUTLINE_PARTITIONS.
    expect(readFileSync("nats/cluster.conf", "utf8")).toContain("{{partition(32,1)}}");
  });

  it("passes OUTLINE_API_TOKEN to the prompt-builder (it listens on 0.0.0.0) and the worker's timings to the worker", () => {
    const text = config({ OUTLINE_API_TOKEN: "t".repeat(32), OUTLINE_IDLE_MS: "5000" });
    // Every prompt-builder (the cluster profile's too, where v1 lists them) and nothing else.
    expect(text.match(/OUTLINE_API_TOKEN: t{32}/g)).toHaveLength(
      (text.match(/SERVICE: prompt-builder/g) ?? []).length,
    );
    // `config` lists services by name: the token must sit in prompt-builder's block.
    const builder = text.slice(text.indexOf("  prompt-builder:"), text.indexOf("  thread-worker:"));
    expect(builder).toContain("OUTLINE_API_TOKEN: ttt");
    expect(text).toMatch(setting("OUTLINE_IDLE_MS", "5000"));
  });
});
