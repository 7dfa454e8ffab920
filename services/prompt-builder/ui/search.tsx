// Search over the thread's original messages (SPEC §8), shown when the prompt-builder serves
// GET /threads/{thread}/search (HISTORY_SEARCH=on): hits newest first, each opened whole.
import type { Ref } from "preact";
import { useEffect, useState } from "preact/hooks";
import { getJson, threadPath } from "./api.ts";
import { when } from "./format.ts";

interface Hit {
  id: number;
  message: string;
  in: string | null;
  at: string;
  from: string;
  snippet: string;
}

export function SearchBox(props: { thread: string; inputRef: Ref<HTMLInputElement> }) {
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
    <div class="search">
      <input
        ref={props.inputRef}
        type="search"
        placeholder="Search this thread's messages   ( / )"
        value={q}
        spellcheck={false}
        onInput={(e) => setQ(e.currentTarget.value)}
        onKeyDown={(e) => e.key === "Escape" && e.currentTarget.blur()}
      />
      {error && <p class="error small">{error}</p>}
      {hits && (
        <ol class="hits">
          {hits.length === 0 && <li class="muted small">no message contains it</li>}
          {hits.map((h) => (
            <li key={h.message}>
              <span class="mono">#{h.id}</span> <span class="who">{h.from}</span>{" "}
              <span class="muted small">
                {when(h.at)} · {h.in ? `in ${h.in}` : "in the tail"}
              </span>
              <p class="preview">{h.snippet}</p>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
