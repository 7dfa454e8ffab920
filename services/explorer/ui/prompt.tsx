// The prompt an agent gets (SPEC §5), in OpenAI or Anthropic format, with the cache boundary:
// the end of the last whole block of 4 outline lines. A cut that only appends lines leaves every
// byte before it as it was (Anthropic's last cache mark sits there); between cuts the prompt
// only grows at its end.
import { Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { NextMerge, OutlineSnapshot, Settings } from "../types.ts";
import { getJson, threadPath } from "./api.ts";
import { bytes, num } from "./format.ts";

type Format = "openai" | "anthropic";

interface Block {
  type: "text";
  text: string;
  cache_control?: { type: string };
}

interface PromptMessage {
  role: string;
  content: string | Block[];
  state?: unknown;
  steps?: unknown[];
}

interface PromptBody {
  messages: PromptMessage[];
  stats: {
    outlineBytes: number;
    tailTokens: number;
    lines: number;
    pending: number;
    newerThanSnapshot: number;
  };
}

const LINES_PER_BLOCK = 4;
const MAX_SHOWN_CHARS = 4_000;

function Boundary(props: { lines: number; mergeLikely: boolean }) {
  return (
    <div class="cache-boundary" role="separator" aria-label="cache boundary" data-boundary>
      <span>
        cache boundary · lines above ({num(props.lines)}) stay byte for byte at the next cut
        {props.mergeLikely ? " unless its merge batch rewrites them" : ""}
      </span>
    </div>
  );
}

/** The outline message's text, line by line, with the boundary after the last whole block. */
function OutlineText(props: { text: string; mergeLikely: boolean }) {
  const rows = props.text.split("\n");
  const first = rows.indexOf("<chat>") + 1;
  const last = rows.lastIndexOf("</chat>");
  const count = last - first;
  const whole = Math.floor(count / LINES_PER_BLOCK) * LINES_PER_BLOCK;
  return (
    <pre class="prompt-text">
      {rows.map((row, i) => (
        <Fragment key={i}>
          {i === first + whole && whole > 0 && (
            <Boundary lines={whole} mergeLikely={props.mergeLikely} />
          )}
          <span class={i >= first && i < last ? "pline" : "pframe"}>{row}</span>
          {"\n"}
        </Fragment>
      ))}
    </pre>
  );
}

function Blocks(props: { blocks: Block[]; mergeLikely: boolean }) {
  const marks = props.blocks.filter((b) => b.cache_control).length;
  let seen = 0;
  return (
    <div class="blocks">
      {props.blocks.map((b, i) => {
        if (b.cache_control) seen += 1;
        const lastMark = b.cache_control !== undefined && seen === marks;
        return (
          <div key={i} class={`block${b.cache_control ? " marked" : ""}`}>
            <pre class="prompt-text">{b.text}</pre>
            {b.cache_control && (
              <span
                class="cache-mark"
                title="cache_control: ephemeral (Anthropic reads the cache up to here)"
              >
                cache mark {seen} of {marks}
              </span>
            )}
            {lastMark && <Boundary lines={i * LINES_PER_BLOCK} mergeLikely={props.mergeLikely} />}
          </div>
        );
      })}
    </div>
  );
}

function Content(props: { message: PromptMessage; outline: boolean; mergeLikely: boolean }) {
  const { message } = props;
  if (Array.isArray(message.content))
    return <Blocks blocks={message.content} mergeLikely={props.mergeLikely} />;
  if (props.outline) return <OutlineText text={message.content} mergeLikely={props.mergeLikely} />;
  const text = message.content;
  return (
    <pre class="prompt-text">
      {text.length > MAX_SHOWN_CHARS
        ? `${text.slice(0, MAX_SHOWN_CHARS)}… [${num(text.length - MAX_SHOWN_CHARS)} more characters]`
        : text}
    </pre>
  );
}

export function PromptPanel(props: {
  thread: string;
  snapshot: OutlineSnapshot;
  settings: Settings;
  next: NextMerge | null;
  leaving: number;
  version: number;
}) {
  const { thread, snapshot, settings } = props;
  const [format, setFormat] = useState<Format>("openai");
  const [agent, setAgent] = useState("");
  const [body, setBody] = useState<PromptBody | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const abort = new AbortController();
    const t = setTimeout(() => {
      const q = new URLSearchParams({ format });
      if (agent.trim()) q.set("agent", agent.trim());
      getJson<PromptBody>(threadPath(thread, `/prompt?${q.toString()}`), abort.signal)
        .then((b) => {
          setBody(b);
          setError(null);
        })
        .catch((err: Error) => err.name !== "AbortError" && setError(err.message));
    }, 150);
    return () => {
      clearTimeout(t);
      abort.abort();
    };
  }, [thread, format, agent, props.version]);

  // The boundary is what one opens this panel for: shown once per thread and format, then the
  // scroll stays where the reader puts it (live updates do not move it).
  const box = useRef<HTMLDivElement>(null);
  const shownFor = useRef("");
  useEffect(() => {
    const key = `${thread}/${format}`;
    if (!body || shownFor.current === key) return;
    shownFor.current = key;
    const boundary = box.current?.querySelector<HTMLElement>("[data-boundary]");
    const view = box.current;
    if (!boundary || !view) return;
    const above = boundary.getBoundingClientRect().top - view.getBoundingClientRect().top;
    view.scrollTop = Math.max(0, view.scrollTop + above - view.clientHeight / 2);
  }, [body, thread, format]);

  // A batch runs at the next cut if the leaving leaves take the outline past outline[1].
  const average =
    snapshot.lines.length > 0 ? snapshot.bytes / snapshot.lines.length : settings.line;
  const mergeLikely = snapshot.bytes + props.leaving * average > settings.outline[1];
  const outlineFirst = snapshot.boundary > 0;
  return (
    <section class="panel prompt" aria-labelledby="prompt-title">
      <header>
        <h2 id="prompt-title">Prompt</h2>
        <div class="segmented" role="group" aria-label="Format">
          {(["openai", "anthropic"] as const).map((f) => (
            <button key={f} type="button" aria-pressed={format === f} onClick={() => setFormat(f)}>
              {f === "openai" ? "OpenAI" : "Anthropic"}
            </button>
          ))}
        </div>
        <label class="agent small">
          agent{" "}
          <input
            value={agent}
            placeholder="(none)"
            spellcheck={false}
            onInput={(e) => setAgent(e.currentTarget.value)}
          />
        </label>
      </header>
      {body && (
        <p
          class="small pad muted"
          title={`A merge batch runs at a cut that takes the outline past ${num(settings.outline[1])} bytes (now ${num(snapshot.bytes)})`}
        >
          {num(body.messages.length)} messages · outline {bytes(body.stats.outlineBytes)},{" "}
          {num(body.stats.lines)} lines · tail {num(body.stats.tailTokens)} tok
          {body.stats.pending > 0 ? ` · ${num(body.stats.pending)} waiting for summaries` : ""}
          {props.next ? ` · merges at the next cut: ${mergeLikely ? "likely" : "no"}` : ""}
        </p>
      )}
      {error && <p class="error small">{error}</p>}
      <div class="messages" ref={box}>
        {body?.messages.map((m, i) => (
          <div key={i} class={`pmsg ${m.role}`}>
            <div class="role mono">
              {m.role}
              {i === 0 && outlineFirst ? " · outline" : ""}
            </div>
            <Content message={m} outline={i === 0 && outlineFirst} mergeLikely={mergeLikely} />
          </div>
        ))}
      </div>
    </section>
  );
}
