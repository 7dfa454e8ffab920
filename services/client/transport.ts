/** The operations a client asks for, each one HTTP route and one NATS subject. */
export type Operation = "prompt" | "zoom" | "search" | "outline" | "tools" | "cluster";

/** One answer as it came: the HTTP status (over NATS, `Outline-Status`) and the JSON text. */
export interface Answer {
  status: number;
  body: string;
  /** Seconds to wait before asking again (the `Retry-After` header), when the answer says. */
  retryAfter?: number;
}

/** Asks one operation once; fails (ApiError) only when no answer came at all. */
export type Transport = (op: Operation, args: Readonly<Record<string, unknown>>) => Promise<Answer>;

/** `Retry-After` in seconds: a whole number, or an HTTP date (then from `now`). */
export function retryAfterSeconds(
  value: string | null | undefined,
  now: number,
): number | undefined {
  if (value === null || value === undefined || value.trim() === "") return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
