/**
 * What the API answers when a request cannot be served: an HTTP status, a stable code callers can
 * branch on, and a message saying what was wrong and what to do. Both transports render it as
 * `{ error: { code, message } }` (SPEC §8).
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: number;
  readonly code: string;
  /** Seconds after which asking again may succeed: HTTP sends it as `Retry-After`. */
  readonly retryAfter: number | undefined;
  constructor(
    status: number,
    code: string,
    message: string,
    options: { retryAfter?: number } = {},
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = options.retryAfter;
  }
}

export interface ErrorBody {
  error: { code: string; message: string };
}

export const errorBody = (err: ApiError): ErrorBody => ({
  error: { code: err.code, message: err.message },
});

export const notFound = (thread: string): ApiError =>
  new ApiError(
    404,
    "THREAD_NOT_FOUND",
    `thread '${thread}' has no outline and no messages: check the thread id, or publish a message to it first (unless it was deleted: a deleted thread's id takes no new messages)`,
  );

/**
 * More messages newer than the thread's snapshot than a prompt reads: the worker is behind or
 * stopped. Asking again makes sense only once it has caught up, so not at once.
 */
export const snapshotBehind = (thread: string, max: number): ApiError =>
  new ApiError(
    503,
    "SNAPSHOT_BEHIND",
    `thread '${thread}' has more than ${max} messages newer than its snapshot: the thread worker is behind or not running; start it or wait for it to catch up, then retry`,
    { retryAfter: 5 },
  );
