// Reads the explorer's JSON (/ui/api/). A 401 means the API wants its token: the page asks once.
import { ApiError, type ErrorBody } from "../../api/api-error.ts";

type AuthListener = () => void;
const authListeners = new Set<AuthListener>();

/** Called when a read answers 401 (the page shows the token form). */
export function onAuthNeeded(listener: AuthListener): () => void {
  authListeners.add(listener);
  return () => authListeners.delete(listener);
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { signal: signal ?? null, headers: { accept: "application/json" } });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(
      0,
      "OFFLINE",
      `the prompt-builder does not answer (${(err as Error).message})`,
    );
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const error = (body as Partial<ErrorBody> | undefined)?.error;
    if (res.status === 401) for (const listener of authListeners) listener();
    throw new ApiError(
      res.status,
      error?.code ?? "HTTP_" + String(res.status),
      error?.message ?? `${res.status} ${res.statusText}`,
    );
  }
  return body as T;
}

/** Opens a session: the token goes once as a bearer header; the answer sets the cookie. */
export async function signIn(token: string): Promise<boolean> {
  const res = await fetch("/ui/api/session", { headers: { authorization: `Bearer ${token}` } });
  return res.ok;
}

export const threadPath = (thread: string, rest = ""): string =>
  `/ui/api/threads/${encodeURIComponent(thread)}${rest}`;
