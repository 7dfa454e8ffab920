// How numbers and times read on the page.

const integer = new Intl.NumberFormat("en-US");

export const num = (n: number | undefined): string => (n === undefined ? "–" : integer.format(n));

/** What the outline's lines cover: "12 lines covering messages 0–255", or that none is yet. */
export function coverage(lines: number, boundary: number): string {
  const counted = `${num(lines)} line${lines === 1 ? "" : "s"}`;
  return boundary > 0
    ? `${counted} covering messages 0–${num(boundary - 1)}`
    : `${counted}, covering no message yet`;
}

/**
 * The tail's next cut, as the page words it: `lead` (bold) then `detail`. The plan is the tail as
 * it is now, but the cut comes only once the tail passes tail[1], when more messages have come,
 * and then takes the oldest until at most tail[0] stay (SPEC §4): the messages due now leave
 * then, and usually many more. So it is a floor, and said as one.
 */
export function nextCutText(
  cut: { leaving: number; leavingTokens: number; tokens: number },
  first: number,
  [low, high]: readonly [number, number],
): { lead: string; detail: string } {
  if (cut.leaving === 0) {
    return {
      lead: "",
      detail:
        cut.tokens > low
          ? "nothing leaves yet: the newest message always stays"
          : `nothing leaves yet: under ${num(low)} tok`,
    };
  }
  const when =
    cut.tokens > high
      ? `the tail passed ${num(high)} tok: the cut waits for their summaries`
      : `when the tail passes ${num(high)} tok, ${num(high - cut.tokens)} to go`;
  return {
    lead: `✂ next cut at ${num(first + cut.leaving)} or later`,
    detail: `: at least ${num(cut.leaving)} leave (${num(cut.leavingTokens)} tok), ${when}`,
  };
}

export function bytes(n: number | undefined): string {
  if (n === undefined) return "–";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** `2026-01-05 08:12` in UTC: threads are read across time zones, and logs say UTC. */
export function when(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)}`;
}

/** `08:12:03.412` (UTC), for transitions. */
export const clock = (ms: number): string => new Date(ms).toISOString().slice(11, 23);

export function ago(iso: string | number, now = Date.now()): string {
  const t = typeof iso === "number" ? iso : Date.parse(iso);
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(h / 24)} d ago`;
}

export const lineName = (line: { id: number; n: number }): string => `${line.id}+${line.n}`;
