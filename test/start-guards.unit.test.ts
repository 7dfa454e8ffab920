import { spawn, spawnSync } from "node:child_process";
import { EventEmitter } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { acquireFolderLock, FolderBusyError } from "../services/start/folder-lock.ts";
import {
  isScriptShell,
  lifeChain,
  operatorSignals,
  SAME_SIGNAL_MS,
} from "../services/start/signals.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "outline-guards-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", "0"]).pid ?? 0;
}

describe("the folder lock", () => {
  it("lets one start hold the folder; a second is refused with the holder's PID and ports", () => {
    const lock = acquireFolderLock(dir);
    lock.update({ nats: "nats://127.0.0.1:4222", http: "http://127.0.0.1:8080" });
    // Another start (a pid of its own) finds ours: this process, alive.
    const err = (() => {
      try {
        acquireFolderLock(dir, process.pid + 1);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(FolderBusyError);
    expect((err as Error).message).toContain(`PID ${process.pid}`);
    expect((err as Error).message).toContain("NATS nats://127.0.0.1:4222");
    expect((err as Error).message).toContain("HTTP http://127.0.0.1:8080");
    // Refused, it changed nothing.
    expect(JSON.parse(readFileSync(join(dir, "start.lock"), "utf8"))).toMatchObject({
      pid: process.pid,
    });
    lock.release();
    expect(existsSync(join(dir, "start.lock"))).toBe(false);
  });

  it("takes over a lock whose start and nats-server are gone", () => {
    const stale = { pid: deadPid(), natsPid: deadPid(), since: "2026-01-01T00:00:00Z" };
    writeFileSync(join(dir, "start.lock"), JSON.stringify(stale));
    const lock = acquireFolderLock(dir);
    const holder = JSON.parse(readFileSync(join(dir, "start.lock"), "utf8")) as { pid: number };
    expect(holder.pid).toBe(process.pid);
    lock.release();
  });

  it("waits while a killed start's nats-server is still stopping", () => {
    const holder = { pid: deadPid(), natsPid: process.pid, since: "2026-01-01T00:00:00Z" };
    writeFileSync(join(dir, "start.lock"), JSON.stringify(holder));
    expect(() => acquireFolderLock(dir)).toThrow(/still stopping; try again/);
  });

  it("releases only its own lock", () => {
    const lock = acquireFolderLock(dir);
    writeFileSync(join(dir, "start.lock"), JSON.stringify({ pid: 1, since: "x" }));
    lock.release();
    expect(existsSync(join(dir, "start.lock"))).toBe(true);
  });
});

describe("operator signals", () => {
  it("takes signals within the same moment as one stop, a later one as a kill", async () => {
    const source = new EventEmitter();
    let now = 1_000;
    const control = operatorSignals(source as unknown as NodeJS.Process, () => now);
    let forced: string | undefined;
    void control.force.then((why) => (forced = why));
    source.emit("SIGINT", "SIGINT");
    now += 5;
    source.emit("SIGINT", "SIGINT");
    now += SAME_SIGNAL_MS - 10;
    source.emit("SIGTERM", "SIGTERM");
    expect(await control.stop).toBe("SIGINT");
    await Promise.resolve();
    expect(forced).toBeUndefined();
    now += 10;
    source.emit("SIGINT", "SIGINT");
    expect(await control.force).toBe("SIGINT");
  });

  it("watches npm above the shell it runs a script in, and only then", () => {
    const parents: Record<number, number> = { 200: 100, 400: 50 };
    const parentOf = (pid: number) => parents[pid];
    const shell = (pid: number) => pid !== 400;
    expect(lifeChain(200, true, parentOf, shell)).toEqual([200, 100]);
    expect(lifeChain(200, false, parentOf, shell)).toEqual([200]);
    // Started by init (or a parent already gone): nothing above to watch.
    expect(lifeChain(300, true, parentOf, shell)).toEqual([300]);
    // npm exec'd us (no shell between): its own parent may go while it runs on.
    expect(lifeChain(400, true, parentOf, shell)).toEqual([400]);
  });

  it("tells a script's shell from other parents", async () => {
    const shell = spawn("sh", ["-c", "sleep 5; true"], { stdio: "ignore" });
    try {
      await new Promise((r) => shell.once("spawn", r));
      expect(isScriptShell(shell.pid ?? 0)).toBe(true);
    } finally {
      shell.kill("SIGKILL");
    }
    expect(isScriptShell(process.pid)).toBe(false);
    expect(isScriptShell(2 ** 22 + 1)).toBe(false);
  });
});
