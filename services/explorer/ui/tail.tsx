// The tail: the messages still whole, their estimated tokens, and where the next cut falls.
import { Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { Settings, TailMessage, TailPage, ThreadBody } from "../types.ts";
import { getJson, threadPath } from "./api.ts";
import { nextCutText, num, when } from "./format.ts";

const PAGE = 50;

interface Whole {
  message: { text: string };
  page: { next: number | null; total: number };
}

function TailRow(props: {
  thread: string;
  m: TailMessage;
  due: boolean;
  /** Set when a search hit opens this message: it opens, and comes into view. */
  revealed: object | null;
}) {
  const { m, revealed } = props;
  const [whole, setWhole] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const head = useRef<HTMLButtonElement>(null);
  const toggle = (to?: boolean) => {
    setOpen((o) => to ?? !o);
    if (whole !== null) return;
    getJson<Whole>(threadPath(props.thread, `/zoom?id=${m.position}&n=1`))
      .then((z) =>
        setWhole(
          z.page.next === null
            ? z.message.text
            : `${z.message.text}\n\n[… ${num(z.page.total - z.page.next)} more characters: open it from the outline's zoom]`,
        ),
      )
      .catch((err: Error) => setWhole(`could not read it: ${err.message}`));
  };
  useEffect(() => {
    if (!revealed) return;
    toggle(true);
    head.current?.focus({ preventScroll: true });
    head.current?.scrollIntoView({ block: "nearest" });
    // Only a new hit opens it: `toggle` is new at every render.
  }, [revealed]);
  return (
    <li
      class={`tail-row${props.due ? " due" : ""}${revealed ? " found" : ""}`}
      data-position={m.position}
    >
      <button
        ref={head}
        type="button"
        class="tail-head"
        aria-expanded={open}
        onClick={() => toggle()}
      >
        <span class="mono pos">{num(m.position)}</span>
        <span class="who">
          {m.from}
          {m.to ? ` → ${m.to}` : ""}
        </span>
        {props.due && (
          <span
            class="badge waiting"
            title="Its leaf is due: summarized ahead, it leaves at the next cut"
          >
            due
          </span>
        )}
        {m.steps > 0 && <span class="badge rest">{m.steps} steps</span>}
        <span class="muted mono small">{when(m.at)}</span>
        <span class="tokens mono" title="estimated tokens">
          {num(m.tokens)} tok
        </span>
      </button>
      <p class="preview">
        {open && whole !== null ? <span class="whole">{whole}</span> : m.preview}
      </p>
    </li>
  );
}

export function TailPanel(props: {
  thread: string;
  body: ThreadBody;
  settings: Settings;
  version: number;
  /** A message to open (a search hit in the tail); a new object opens it again. */
  reveal: { position: number } | null;
}) {
  const { thread, body, settings, reveal } = props;
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<TailPage | null>(null);
  const [error, setError] = useState<string | null>(null);
  const count = body.tail.count;

  useEffect(() => setOffset(0), [thread]);
  // The page that holds the hit.
  useEffect(() => {
    if (!reveal) return;
    const at = reveal.position - body.tail.first;
    if (at >= 0 && at < count) setOffset(Math.floor(at / PAGE) * PAGE);
  }, [reveal]);
  useEffect(() => {
    const abort = new AbortController();
    getJson<TailPage>(threadPath(thread, `/tail?offset=${offset}&limit=${PAGE}`), abort.signal)
      .then((p) => {
        // A cut shortened the tail under this page: the server answers an empty page with the
        // count, and the page steps back to the last one there is.
        if (p.messages.length === 0 && offset > 0 && offset >= p.count) {
          setOffset(Math.floor(Math.max(0, p.count - 1) / PAGE) * PAGE);
          return;
        }
        setPage(p);
        setError(null);
      })
      .catch((err: Error) => err.name !== "AbortError" && setError(err.message));
    return () => abort.abort();
  }, [thread, offset, props.version]);

  const cut = page?.cut ?? body.tail.cut;
  const [low, high] = settings.tail;
  const share = Math.min(100, (cut.tokens / high) * 100);
  const first = page?.first ?? body.tail.first;
  const cutPosition = first + cut.leaving;
  const plan = nextCutText(cut, first, settings.tail);
  const messages = page?.messages ?? [];
  return (
    <section class="panel tail" aria-labelledby="tail-title">
      <header>
        <h2 id="tail-title">Tail</h2>
        <span class="muted small">
          {num(count)} whole · {num(cut.tokens)} tok
          {body.tail.newer > 0 ? ` · ${num(body.tail.newer)} newer than the snapshot` : ""}
        </span>
        {count > PAGE && (
          <nav class="mini-pager small" aria-label="Tail pages">
            <button
              type="button"
              disabled={offset === 0}
              onClick={() => setOffset(Math.max(0, offset - PAGE))}
              title="Older messages"
            >
              ‹
            </button>
            <span class="muted">
              {num(first + offset)}–{num(first + Math.min(count, offset + PAGE) - 1)}
            </span>
            <button
              type="button"
              disabled={offset + PAGE >= count}
              onClick={() => setOffset(offset + PAGE)}
              title="Newer messages"
            >
              ›
            </button>
          </nav>
        )}
      </header>
      <div
        class="cut-summary small"
        title={`The tail is cut once it passes ${num(high)} tokens: the oldest leave until at most ${num(low)} stay (the newest always stays). A leaf is due, and summarized ahead, once the messages after it cost more than ${num(low)}.`}
      >
        <div class="meter">
          <div class="fill" style={{ width: `${share}%` }} />
          <div class="mark" style={{ left: `${(low / high) * 100}%` }} />
        </div>
        <span>
          {plan.lead && <b>{plan.lead}</b>}
          {plan.detail}
        </span>
      </div>
      {body.tail.note && <p class="warning small">{body.tail.note}</p>}
      {error && <p class="error small">{error}</p>}
      <ol class="tail-list">
        {messages.map((m) => (
          <Fragment key={m.id}>
            {m.position === cutPosition && cut.leaving > 0 && (
              <li class="cut-line" aria-label="where the next cut falls at the earliest">
                <span>
                  ✂ next cut: the messages above leave for the outline, and likely some below
                </span>
              </li>
            )}
            <TailRow
              thread={thread}
              m={m}
              due={m.position < first + cut.due}
              revealed={reveal?.position === m.position ? reveal : null}
            />
          </Fragment>
        ))}
      </ol>
    </section>
  );
}
