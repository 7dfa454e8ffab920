import { describe, expect, it } from "vitest";
import { untilStop, type Instance, type StopReason } from "../services/cluster/supervise.ts";
import type { Exit } from "../services/util/processes.ts";

// `npm run cluster`: when does the local cluster stop, and what does it say meanwhile.
function instance(name: string): Instance & { exit(exit: Exit): void } {
  let exit: (e: Exit) => void = () => undefined;
  const exited = new Promise<Exit>((resolve) => (exit = resolve));
  return { name, exited, exit };
}

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

function watch(instances: Instance[], keepGoing: boolean) {
  let signal: (name: string) => void = () => undefined;
  const stopped = new Promise<string>((resolve) => (signal = resolve));
  const lines: string[] = [];
  let reason: StopReason | undefined;
  void untilStop(instances, stopped, { keepGoing, log: (l) => lines.push(l) }).then(
    (r) => (reason = r),
  );
  return { lines, signal, reason: () => reason };
}

describe("npm run cluster", () => {
  it("stops everything when one instance exits, by default", async () => {
    const [a, b] = [instance("i1"), instance("i2")];
    const w = watch([a, b], false);
    a.exit({ code: 1, signal: null });
    await settle();
    expect(w.reason()).toEqual({ why: "instance i1 exited with code 1", failed: true });
  });

  it("with --keep-going, reports an instance that exits and keeps the others running", async () => {
    const [a, b, c] = [instance("i1"), instance("i2"), instance("i3")];
    const w = watch([a, b, c], true);
    b.exit({ code: 1, signal: null });
    await settle();
    expect(w.reason()).toBeUndefined();
    expect(w.lines).toEqual([
      "instance i2 exited with code 1; 2 of 3 still running (--keep-going)",
    ]);
    // Ctrl-C then stops the rest, as usual.
    w.signal("SIGINT");
    await settle();
    expect(w.reason()).toEqual({ why: "SIGINT", failed: false });
  });

  it("with --keep-going, stops once the last instance has exited", async () => {
    const [a, b] = [instance("i1"), instance("i2")];
    const w = watch([a, b], true);
    a.exit({ code: null, signal: "SIGKILL" });
    await settle();
    expect(w.reason()).toBeUndefined();
    b.exit({ code: 1, signal: null });
    await settle();
    expect(w.reason()).toEqual({
      why: "instance i2 exited with code 1, the last of 2",
      failed: true,
    });
    expect(w.lines).toEqual([
      "instance i1 was killed by SIGKILL; 1 of 2 still running (--keep-going)",
    ]);
  });
});
