import { describeExit, type Exit } from "../util/processes.ts";

/** What `npm run cluster` watches of an instance it started. */
export interface Instance {
  name: string;
  exited: Promise<Exit>;
}

/** Why the local cluster stops, and whether that is a failure (exit code 1). */
export interface StopReason {
  why: string;
  failed: boolean;
}

/**
 * Waits until the local cluster should stop: a signal (`stopped` resolves with its name), or an
 * instance exiting. By default the first instance to exit stops them all. With `keepGoing` an
 * instance that exits is reported and the others run on, so a failover can be tried (a worker
 * killed, its instance gone, its partitions taken over); they stop when every one has exited.
 */
export async function untilStop(
  instances: readonly Instance[],
  stopped: Promise<string>,
  options: { keepGoing: boolean; log: (line: string) => void },
): Promise<StopReason> {
  let running = instances.length;
  const exits = instances.map((p) =>
    p.exited.then((exit): StopReason | undefined => {
      running -= 1;
      const what = `instance ${p.name} ${describeExit(exit)}`;
      if (!options.keepGoing) return { why: what, failed: true };
      if (running > 0) {
        options.log(`${what}; ${running} of ${instances.length} still running (--keep-going)`);
        return undefined;
      }
      return { why: `${what}, the last of ${instances.length}`, failed: true };
    }),
  );
  // Each exit that is not a reason to stop waits for the others.
  const firstReason = new Promise<StopReason>((resolve) => {
    for (const exit of exits) void exit.then((reason) => reason && resolve(reason));
  });
  return Promise.race([stopped.then((signal) => ({ why: signal, failed: false })), firstReason]);
}
