/**
 * Why a summary could not be built. `terminal` errors will fail the same way on every retry
 * (a rejected key, an unknown model): the host should stop and surface them. The others are
 * transient (rate limits, outages, timeouts, an empty reply): the host may try the job again.
 */
export type SummarizerErrorCode =
  | "AUTH"
  | "FORBIDDEN"
  | "BAD_REQUEST"
  | "NOT_FOUND"
  | "RATE_LIMITED"
  | "SERVER"
  | "TIMEOUT"
  | "CONNECTION"
  | "EMPTY_REPLY"
  | "ABORTED";

export class SummarizerError extends Error {
  override readonly name = "SummarizerError";
  readonly code: SummarizerErrorCode;
  readonly terminal: boolean;
  /** HTTP status of the last response, when there was one. */
  readonly status: number | undefined;

  constructor(
    code: SummarizerErrorCode,
    message: string,
    options: { terminal: boolean; status?: number; cause?: unknown },
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.terminal = options.terminal;
    this.status = options.status;
  }

  get retryable(): boolean {
    return !this.terminal;
  }
}
