import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SettingsError } from "../shared/errors.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { loadSettings } from "../services/config/load.ts";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { DEFAULT_NATS_URL, natsUrlSource } from "../services/config/nats-url.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "outline-config-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function writeJson(name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));
  return file;
}

function settingsError(run: () => unknown): SettingsError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(SettingsError);
    return err as SettingsError;
  }
  throw new Error("expected a SettingsError");
}

describe("loadSettings", () => {
  it("gives the defaults with no file and no variables", () => {
    const config = loadSettings({}, [], dir);
    expect(config.settings).toEqual(DEFAULT_SETTINGS);
    expect(config.names).toEqual(DEFAULT_NAMES);
    expect(config.auth).toEqual({ kind: "none" });
    expect(config.replicas).toBe(1);
    expect(config.configFile).toBeUndefined();
  });

  it("reads ./outline.config.json from the working directory when present", () => {
    const file = writeJson("outline.config.json", { HISTORY_TAIL: "200,400" });
    const config = loadSettings({}, [], dir);
    expect(config.configFile).toBe(file);
    expect(config.settings.tail).toEqual([200, 400]);
  });

  it("lets the environment override the file, but not with an empty value", () => {
    const file = writeJson("custom.json", {
      HISTORY_TAIL: "200,400",
      HISTORY_LINE: 100,
      HISTORY_OUTLINE: [2000, 4000],
      OUTLINE_CHAT_STREAM: "FROM_FILE",
    });
    const config = loadSettings(
      { OUTLINE_CONFIG: file, HISTORY_LINE: "128", OUTLINE_CHAT_STREAM: "" },
      [],
      dir,
    );
    expect(config.settings.line).toBe(128);
    expect(config.settings.tail).toEqual([200, 400]);
    expect(config.settings.outline).toEqual([2000, 4000]);
    expect(config.names.chatStream).toBe("FROM_FILE");
  });

  it("prefers --config over OUTLINE_CONFIG", () => {
    const a = writeJson("a.json", { HISTORY_LINE: "100" });
    const b = writeJson("b.json", { HISTORY_LINE: "200" });
    expect(loadSettings({ OUTLINE_CONFIG: a }, ["--config", b], dir).settings.line).toBe(200);
    expect(loadSettings({ OUTLINE_CONFIG: a }, [`--config=${b}`], dir).settings.line).toBe(200);
  });

  it("keeps other variables from the file for modules that read their own", () => {
    const file = writeJson("c.json", { OPENAI_BASE_URL: "http://127.0.0.1:1/v1" });
    const config = loadSettings({ OUTLINE_CONFIG: file, OPENAI_API_KEY: "k" }, [], dir);
    expect(config.values.OPENAI_BASE_URL).toBe("http://127.0.0.1:1/v1");
    expect(config.values.OPENAI_API_KEY).toBe("k");
  });

  it("warns about an unknown key of our own families in the file", () => {
    const file = writeJson("typo.json", { HISTORY_TALE: "1,2", SOMETHING_ELSE: "x" });
    const config = loadSettings({ OUTLINE_CONFIG: file }, [], dir);
    expect(config.warnings).toHaveLength(1);
    expect(config.warnings[0]).toContain("HISTORY_TALE");
  });

  it("accepts the token and the worker's timings in the file, for the services to read", () => {
    const values = {
      OUTLINE_API_TOKEN: "x".repeat(32),
      OUTLINE_IDLE_MS: "5000",
      OUTLINE_ACK_WAIT_MS: "3000",
    };
    const config = loadSettings({ OUTLINE_CONFIG: writeJson("svc.json", values) }, [], dir);
    expect(config.warnings).toEqual([]);
    expect(config.values.OUTLINE_API_TOKEN).toBe("x".repeat(32));
    expect(config.values.OUTLINE_IDLE_MS).toBe("5000");
  });

  it("names the variable of a bad value, from the file or the environment", () => {
    const file = writeJson("bad.json", { HISTORY_TAIL: "lots" });
    const fromFile = settingsError(() => loadSettings({ OUTLINE_CONFIG: file }, [], dir));
    expect(fromFile.setting).toBe("HISTORY_TAIL");
    expect(fromFile.message).toMatch(/^HISTORY_TAIL: /);

    const fromEnv = settingsError(() => loadSettings({ PORT: "http" }, [], dir));
    expect(fromEnv.setting).toBe("PORT");
  });

  it("names OUTLINE_CONFIG when the file is missing or not JSON", () => {
    const missing = settingsError(() =>
      loadSettings({ OUTLINE_CONFIG: join(dir, "nope.json") }, [], dir),
    );
    expect(missing.setting).toBe("OUTLINE_CONFIG");
    expect(missing.message).toContain("does not exist");

    const broken = writeJson("broken.json", "{ HISTORY_LINE: 5");
    const notJson = settingsError(() => loadSettings({ OUTLINE_CONFIG: broken }, [], dir));
    expect(notJson.setting).toBe("OUTLINE_CONFIG");
    expect(notJson.message).toContain("not valid JSON");

    const list = writeJson("list.json", ["HISTORY_LINE"]);
    expect(settingsError(() => loadSettings({ OUTLINE_CONFIG: list }, [], dir)).setting).toBe(
      "OUTLINE_CONFIG",
    );
  });

  it("names the key of a file value that is not a string or number", () => {
    const file = writeJson("obj.json", { HISTORY_LINE: { value: 5 } });
    expect(settingsError(() => loadSettings({ OUTLINE_CONFIG: file }, [], dir)).setting).toBe(
      "HISTORY_LINE",
    );
  });

  it("reads and checks the infrastructure names", () => {
    const config = loadSettings(
      { OUTLINE_CHAT_STREAM: "PLATFORM_CHAT", OUTLINE_CHAT_PREFIX: "acme.chat" },
      [],
      dir,
    );
    expect(config.names.chatStream).toBe("PLATFORM_CHAT");
    expect(config.names.chatPrefix).toBe("acme.chat");

    expect(
      settingsError(() => loadSettings({ OUTLINE_HISTORY_STREAM: "HIS.TORY" }, [], dir)).setting,
    ).toBe("OUTLINE_HISTORY_STREAM");
    expect(
      settingsError(() => loadSettings({ OUTLINE_CHAT_PREFIX: "chat.>" }, [], dir)).setting,
    ).toBe("OUTLINE_CHAT_PREFIX");
  });

  it("refuses subject spaces or streams that would collide", () => {
    const overlap = settingsError(() =>
      loadSettings({ OUTLINE_DEAD_SUBJECT: "history.dead" }, [], dir),
    );
    expect(overlap.setting).toBe("OUTLINE_DEAD_SUBJECT");
    expect(overlap.message).toContain("OUTLINE_HISTORY_PREFIX");

    const sameStream = settingsError(() =>
      loadSettings({ OUTLINE_HISTORY_STREAM: "CHAT" }, [], dir),
    );
    expect(sameStream.setting).toBe("OUTLINE_HISTORY_STREAM");
  });

  it("reads NATS credentials and refuses half or double ones", () => {
    expect(loadSettings({ NATS_TOKEN: "t" }, [], dir).auth).toEqual({ kind: "token", token: "t" });
    expect(loadSettings({ NATS_USER: "u", NATS_PASSWORD: "p" }, [], dir).auth).toEqual({
      kind: "user",
      user: "u",
      password: "p",
    });
    expect(settingsError(() => loadSettings({ NATS_USER: "u" }, [], dir)).setting).toBe(
      "NATS_PASSWORD",
    );
    expect(
      settingsError(() =>
        loadSettings({ NATS_USER: "u", NATS_PASSWORD: "p", NATS_TOKEN: "t" }, [], dir),
      ).setting,
    ).toBe("NATS_TOKEN");
    expect(
      settingsError(() => loadSettings({ NATS_CREDS: "missing.creds" }, [], dir)).setting,
    ).toBe("NATS_CREDS");
    const creds = writeJson("svc.creds", "-----BEGIN NATS USER JWT-----");
    expect(loadSettings({ NATS_CREDS: "svc.creds" }, [], dir).auth).toEqual({
      kind: "creds",
      file: creds,
    });
  });

  it("accepts 1, 3 or 5 replicas only", () => {
    expect(loadSettings({ OUTLINE_REPLICAS: "3" }, [], dir).replicas).toBe(3);
    expect(settingsError(() => loadSettings({ OUTLINE_REPLICAS: "2" }, [], dir)).setting).toBe(
      "OUTLINE_REPLICAS",
    );
  });

  it("reads the partition count, unset by default (one instance)", () => {
    expect(loadSettings({}, [], dir).names.partitions).toBeUndefined();
    expect(loadSettings({ OUTLINE_PARTITIONS: "32" }, [], dir).names.partitions).toBe(32);
    for (const bad of ["0", "-1", "1.5", "x", "4097"]) {
      const err = settingsError(() => loadSettings({ OUTLINE_PARTITIONS: bad }, [], dir));
      expect(err.setting).toBe("OUTLINE_PARTITIONS");
      expect(err.message).toContain("partition(N,1)");
    }
  });
});

describe("natsUrlSource", () => {
  const unset = { settings: { natsUrl: undefined } };
  const startedIn = (folder: string, url: string): string => {
    mkdirSync(join(folder, ".data"), { recursive: true });
    return writeJson(join(folder.slice(dir.length), ".data", "nats.url"), `${url}\n`);
  };

  it("finds a running start's server from its folder or any folder below it, nearest first", () => {
    const deep = join(dir, "a", "b", "c");
    mkdirSync(deep, { recursive: true });
    const outer = startedIn(dir, "nats://127.0.0.1:5001");
    expect(natsUrlSource(unset, deep)).toEqual({ url: "nats://127.0.0.1:5001", from: outer });
    const inner = startedIn(join(dir, "a"), "nats://127.0.0.1:5002");
    expect(natsUrlSource(unset, deep)).toEqual({ url: "nats://127.0.0.1:5002", from: inner });
    expect(natsUrlSource(unset, dir)).toEqual({ url: "nats://127.0.0.1:5001", from: outer });
  });

  it("prefers NATS_URL, and says when it fell back to the default", () => {
    startedIn(dir, "nats://127.0.0.1:5001");
    const set = { settings: { natsUrl: "nats://elsewhere:4222" } };
    expect(natsUrlSource(set, dir)).toEqual({ url: "nats://elsewhere:4222", from: "setting" });
    rmSync(join(dir, ".data"), { recursive: true });
    expect(natsUrlSource(unset, dir)).toEqual({ url: DEFAULT_NATS_URL, from: "default" });
  });
});
