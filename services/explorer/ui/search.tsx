// Search over the thread's original messages (SPEC §8), shown when the prompt-builder serves
// GET /threads/{thread}/search (HISTORY_SEARCH=on): hits newest first; opening one shows the
// message where it is, down the outline's tree or in the tail.
import type { Ref } from "preact";
import { useEffect, useState } from "preact/hooks";
import { getJson, threadPath } from "./api.ts";
import { when } from "./format.ts";

export interface Hit {
  id: number;
  message: string;
  in: string | null;
  at: string;
  from: string;
  snippet: string;
}

/** ↓ ↑ from the field through the hits, and back up to the field. */
function onHitsKey(e: KeyboardEvent) {
  if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
  const box = (e.currentTarget as HTMLElement).closest(".search");
  const stops = [...(box?.querySelectorAll<HTMLElement>("input, .hit") ?? [])];
  const at = stops.indexOf(e.target as HTMLElement);
  const next = stops[at + (e.key === "ArrowDown" ? 1 : -1)];
  if (at < 0 || !next) return;
  next.focus();
  e.preventDefault();
}

export function SearchBox(props: {
  thread: string;
  inputRef: Ref<HTMLInputElement>;
  onOpen: (hit: Hit) => void;
}) {
  const [q, setQ] = useState("");
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const query = q.trim();
    if (query === "") {
      setHits(null);
      return;
    }
    const abort = new AbortController();
    const t = setTimeout(() => {
      getJson<{ hits: Hit[] }>(
        threadPath(props.thread, `/search?q=${encodeURIComponent(query)}`),
        abort.signal,
      )
        .then((b) => {
          setHits(b.hits);
          setError(null);
        })
        .catch((err: Error) => err.name !== "AbortError" && setError(err.message));
    }, 250);
    return () => {
      clearTimeout(t);
      abort.abort();
    };
  }, [q, props.thread]);
  return (
    <div class="search" onKeyDown={onHitsKey}>
      <input
        ref={props.inputRef}
        type="search"
        aria-label="Search this thread's messages"
        placeholder="Search this thread's messages   ( / )"
        value={q}
        spellcheck={false}
        onInput={(e) => setQ(e.currentTarget.value)}
        onKeyDown={(e) => e.key === "Escape" && e.currentTarget.blur()}
      />
      {error && <p class="error small">{error}</p>}
      {hits && (
        <ol class="hits" aria-label="Messages found, newest first">
          {hits.length === 0 && <li class="muted small">no message contains it</li>}
          {hits.map((h) => (
            <li key={h.message}>
              <button
                type="button"
                class="hit"
                data-hit={h.id}
                title={`Open message ${h.id} ${h.in ? `down line ${h.in}` : "in the tail"}`}
                onClick={() => props.onOpen(h)}
              >
                <span class="mono">#{h.id}</span> <span class="who">{h.from}</span>{" "}
                <span class="muted small">
                  {when(h.at)} · {h.in ? `in ${h.in}` : "in the tail"}
                </span>
                <span class="preview">{h.snippet}</span>
              </button>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
