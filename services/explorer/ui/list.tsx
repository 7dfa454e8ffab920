// /ui/: the threads, most recently written first, paged; a filter on the thread id.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ActorStatesBody, ThreadPage, ThreadRow } from "../types.ts";
import { getJson } from "./api.ts";
import { ActorBadge } from "./actor.tsx";
import { ago, bytes, num, when } from "./format.ts";
import { useKeys } from "./keys.ts";
import { Link, navigate, threadUrl } from "./router.tsx";

const PAGE = 50;

function listUrl(filter: string, before: number | null): string {
  const q = new URLSearchParams();
  if (filter) q.set("filter", filter);
  if (before !== null) q.set("before", String(before));
  const s = q.toString();
  return s ? `/ui/?${s}` : "/ui/";
}

/** Work the snapshot says is outstanding, for a thread whose actor is not in memory. */
function pendingText(row: ThreadRow): string {
  const p = row.pending;
  if (!p) return "";
  const parts: string[] = [];
  if (p.merging) parts.push("merge waiting");
  if (p.cuts > 0) parts.push(`${p.cuts} cut${p.cuts > 1 ? "s" : ""} waiting`);
  if (p.jobs > 0) parts.push(`${p.jobs} summar${p.jobs > 1 ? "ies" : "y"} out`);
  return parts.join(", ");
}

export function ThreadList(props: { search: URLSearchParams }) {
  const filter = props.search.get("filter") ?? "";
  const beforeRaw = props.search.get("before");
  const before = beforeRaw && /^\d+$/.test(beforeRaw) ? Number(beforeRaw) : null;
  const [typed, setTyped] = useState(filter);
  const [page, setPage] = useState<ThreadPage | null>(null);
  const [actors, setActors] = useState<ActorStatesBody["actors"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [selected, setSelected] = useState(0);
  const [reloads, setReloads] = useState(0);
  const filterBox = useRef<HTMLInputElement>(null);
  const table = useRef<HTMLTableElement>(null);

  useEffect(() => setTyped(filter), [filter]);

  // The filter applies as one types, a moment after the last key.
  useEffect(() => {
    if (typed === filter) return;
    const t = setTimeout(() => navigate(listUrl(typed.trim(), null), true), 250);
    return () => clearTimeout(t);
  }, [typed, filter]);

  useEffect(() => {
    const abort = new AbortController();
    setLoading(true);
    setError(null);
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (filter) q.set("filter", filter);
    if (before !== null) q.set("before", String(before));
    getJson<ThreadPage>(`/ui/api/threads?${q.toString()}`, abort.signal)
      .then((body) => {
        setPage(body);
        setSelected((s) => Math.min(s, Math.max(0, body.threads.length - 1)));
        setActors(null);
        setLoading(false);
        if (body.threads.length === 0) return;
        const names = body.threads.map((t) => t.thread).join(",");
        return getJson<ActorStatesBody>(
          `/ui/api/actors?threads=${encodeURIComponent(names)}`,
          abort.signal,
        ).then((a) => setActors(a.actors));
      })
      .catch((err: Error) => {
        if (err.name === "AbortError") return;
        setError(err.message);
        setLoading(false);
      });
    return () => abort.abort();
  }, [filter, before, reloads]);

  const threads = page?.threads ?? [];
  const older = page?.next ?? null;

  useKeys(
    useMemo(
      () => ({
        "/": () => filterBox.current?.focus(),
        j: () => setSelected((s) => Math.min(s + 1, threads.length - 1)),
        ArrowDown: () => setSelected((s) => Math.min(s + 1, threads.length - 1)),
        k: () => setSelected((s) => Math.max(s - 1, 0)),
        ArrowUp: () => setSelected((s) => Math.max(s - 1, 0)),
        Enter: () => {
          const t = threads[selected];
          if (t) navigate(threadUrl(t.thread));
        },
        o: () => {
          const t = threads[selected];
          if (t) navigate(threadUrl(t.thread));
        },
        n: () => older !== null && navigate(listUrl(filter, older)),
        "]": () => older !== null && navigate(listUrl(filter, older)),
        p: () => before !== null && history.back(),
        "[": () => before !== null && history.back(),
        g: () => navigate(listUrl(filter, null)),
        r: () => setReloads((r) => r + 1),
      }),
      [threads, selected, older, filter, before],
    ),
  );

  useEffect(
    () => table.current?.tBodies[0]?.rows[selected]?.scrollIntoView({ block: "nearest" }),
    [selected],
  );

  return (
    <main class="list-page">
      <div class="toolbar">
        <label class="filter">
          <span class="sr-only">Filter by thread id</span>
          <input
            ref={filterBox}
            type="search"
            placeholder="Filter by thread id   ( / )"
            value={typed}
            spellcheck={false}
            autoComplete="off"
            onInput={(e) => setTyped(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === "Escape" || e.key === "Enter") e.currentTarget.blur();
            }}
          />
        </label>
        <span class="muted summary">
          {page
            ? `${num(page.total)} keys in the snapshot bucket · most recently written first`
            : " "}
        </span>
        <button
          type="button"
          class="ghost"
          onClick={() => setReloads((r) => r + 1)}
          title="Reload (r)"
        >
          Reload
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <table ref={table} class="threads" aria-busy={loading}>
        <thead>
          <tr>
            <th>Thread</th>
            <th>Last written</th>
            <th class="num">Messages</th>
            <th class="num">Boundary</th>
            <th class="num">Lines</th>
            <th class="num">Outline</th>
            <th class="num">Tail</th>
            <th>Actor</th>
          </tr>
        </thead>
        <tbody>
          {threads.map((t, i) => (
            <tr
              key={t.thread}
              class={i === selected ? "selected" : ""}
              onMouseEnter={() => setSelected(i)}
            >
              <td class="thread-id">
                <Link href={threadUrl(t.thread)} tabIndex={i === selected ? 0 : -1}>
                  {t.thread}
                </Link>
              </td>
              <td title={when(t.updated)}>{ago(t.updated)}</td>
              <td class="num">{num(t.count)}</td>
              <td class="num">{num(t.boundary)}</td>
              <td class="num">{num(t.lines)}</td>
              <td class="num">{bytes(t.bytes)}</td>
              <td class="num">{num(t.tail)}</td>
              <td>
                <ActorBadge report={actors?.[t.thread]} loading={actors === null} />
                <span class="muted small">
                  {" "}
                  {actors && !actors[t.thread] ? pendingText(t) : ""}
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {!loading && threads.length === 0 && !error && (
        <p class="empty">
          {filter
            ? page?.partial
              ? `No thread id containing “${filter}” among the ${num(page.scanned)} most recent; go on searching older ones.`
              : `No thread id contains “${filter}”.`
            : 'No threads yet: publish a message (npx outline send demo "hello").'}
        </p>
      )}
      <nav class="pager" aria-label="Pages">
        <button
          type="button"
          disabled={before === null}
          onClick={() => navigate(listUrl(filter, null))}
          title="Newest (g)"
        >
          « Newest
        </button>
        <span class="muted">
          {page?.partial && older !== null
            ? `searched ${num(page.scanned)} keys; older ones not yet`
            : threads.length > 0
              ? `${threads.length} shown`
              : ""}
        </span>
        <button
          type="button"
          disabled={older === null}
          onClick={() => older !== null && navigate(listUrl(filter, older))}
          title="Older (n)"
        >
          Older ›
        </button>
      </nav>
    </main>
  );
}
