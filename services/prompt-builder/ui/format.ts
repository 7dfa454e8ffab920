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
