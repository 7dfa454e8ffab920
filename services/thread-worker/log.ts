/** Where the worker reports what it did; tests pass a quiet one, main a console one. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

function line(message: string, fields?: Record<string, unknown>): string {
  if (!fields || Object.keys(fields).length === 0) return message;
  return `${message} ${JSON.stringify(fields)}`;
}

/** One line per event, prefixed so it reads well among `npm start`'s other services. */
export function consoleLogger(prefix = "thread-worker"): Logger {
  return {
    info: (message, fields) => console.log(`${prefix}: ${line(message, fields)}`),
    warn: (message, fields) => console.warn(`${prefix}: warning: ${line(message, fields)}`),
    error: (message, fields) => console.error(`${prefix}: error: ${line(message, fields)}`),
  };
}

export const quietLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
