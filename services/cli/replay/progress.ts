/** Where progress goes: a terminal gets a redrawn bar, anything else plain lines. */
export interface ProgressOutput {
  write(text: string): void;
  isTTY?: boolean;
  columns?: number;
}

export interface Progress {
  /** Sets or raises the number of messages expected; until called, the total is unknown. */
  total(n: number): void;
  tick(n?: number): void;
  done(): void;
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "?";
  if (seconds < 60) return `${Math.ceil(seconds)}s`;
  const m = Math.floor(seconds / 60);
  return `${m}m${String(Math.ceil(seconds % 60)).padStart(2, "0")}s`;
}

/**
 * Messages replayed, messages/s and ETA. On a TTY a bar redrawn at most 10 times a second;
 * otherwise a line at most every `everyMs` (logs stay readable) and one at the end, unless the
 * last line already said the same count. With nothing expected and nothing counted, nothing.
 * Until `total` is called the total is unknown (a pipe): the count and rate only, no bar, no
 * percentage, no ETA, rather than a total that is only the count so far.
 */
export function createProgress(
  out: ProgressOutput,
  label: string,
  now: () => number = () => performance.now(),
  everyMs = 1_000,
): Progress {
  const tty = out.isTTY === true;
  const started = now();
  let expected = 0;
  let known = false;
  let count = 0;
  let lastShown = -Infinity;
  /** The count of the last line written: the end writes it again only on a TTY. */
  let shown = "";

  const measure = (): { pct: number; rate: number; eta: string } => {
    const elapsed = Math.max((now() - started) / 1000, 1e-3);
    const rate = count / elapsed;
    const eta = rate > 0 ? (expected - count) / rate : Infinity;
    const pct = expected > 0 ? Math.min(100, Math.floor((count / expected) * 100)) : 100;
    return { pct, rate: Math.round(rate), eta: duration(Math.max(0, eta)) };
  };

  const show = (final: boolean): void => {
    // Nothing to count (a thread with no events, an empty file): a 0/0 line would only come
    // before the error or summary that says so.
    if (expected === 0) return;
    const t = now();
    if (!final && t - lastShown < (tty ? 100 : everyMs)) return;
    const counted = known ? `${count}/${expected}` : String(count);
    // A log needs no second line saying the same (a short run's first tick is also its last).
    if (final && !tty && shown === counted) return;
    lastShown = t;
    shown = counted;
    const { pct, rate, eta } = measure();
    if (!known) {
      const stats = `${count} message${count === 1 ? "" : "s"}  ${rate} msg/s`;
      out.write(tty ? `\r${label} ${stats}\x1b[K${final ? "\n" : ""}` : `${label}: ${stats}\n`);
      return;
    }
    const stats = `${count}/${expected} messages  ${rate} msg/s  ETA ${final ? "0s" : eta}`;
    if (tty) {
      const width = Math.max(
        10,
        Math.min(40, (out.columns ?? 80) - stats.length - label.length - 12),
      );
      const filled = Math.round((pct / 100) * width);
      out.write(
        `\r${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(pct).padStart(3)}% ${stats}\x1b[K${final ? "\n" : ""}`,
      );
    } else {
      out.write(`${label}: ${stats} (${pct}%)\n`);
    }
  };

  return {
    total(n) {
      known = true;
      expected = Math.max(expected, n);
    },
    tick(n = 1) {
      count += n;
      if (count > expected) expected = count;
      show(false);
    },
    done() {
      show(true);
    },
  };
}
