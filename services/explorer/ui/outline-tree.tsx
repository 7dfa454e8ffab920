// The outline as a tree: its lines oldest first, each opened by zoom into the two it was made
// from, down to the message whole (paged when long). Arrow keys walk it (a WAI-ARIA tree).
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { NextMerge, SnapshotLine } from "../types.ts";
import { getJson, threadPath } from "./api.ts";
import { bytes, lineName, num, when } from "./format.ts";
import { MessageCard, type ZoomedMessage } from "./message-card.tsx";

interface ZoomLine {
  id: number;
  n: number;
  text: string;
  until: string;
}

type Opened =
  | { kind: "loading" }
  | { kind: "lines"; lines: ZoomLine[] }
  | { kind: "message"; body: ZoomedMessage }
  | { kind: "error"; message: string };

interface Row {
  key: string;
  depth: number;
  parent: string | null;
  line?: ZoomLine & { bytes?: number; level: number };
  /** The message card under a leaf. */
  card?: ZoomedMessage;
  status?: "loading" | "error";
  error?: string;
  index?: number;
}

const keyOf = (l: { id: number; n: number }) => lineName(l);
const levelOf = (n: number) => Math.round(Math.log2(n));

export function levelColor(level: number): string {
  return `var(--level-${Math.min(level, 11)})`;
}

/** The outline and the tail as one bar, each line as wide as the messages it covers. */
export function CoverageStrip(props: {
  lines: SnapshotLine[];
  tail: number;
  next: NextMerge | null;
  onPick: (key: string) => void;
}) {
  const { lines, tail, next } = props;
  return (
    <div
      class="coverage"
      role="img"
      aria-label={`${lines.length} outline lines, then ${tail} messages whole`}
    >
      {lines.map((l, i) => (
        <button
          type="button"
          tabIndex={-1}
          key={keyOf(l)}
          class={`seg${next && (i === next.index || i === next.index + 1) ? " merging" : ""}`}
          style={{ flexGrow: l.n, background: levelColor(l.level) }}
          title={`${keyOf(l)} · level ${l.level} · ${num(l.n)} message${l.n > 1 ? "s" : ""}`}
          onClick={() => props.onPick(keyOf(l))}
        />
      ))}
      {tail > 0 && (
        <span
          class="seg tail"
          style={{ flexGrow: tail }}
          title={`tail: ${num(tail)} messages whole`}
        />
      )}
    </div>
  );
}

export function OutlineTree(props: {
  thread: string;
  lines: SnapshotLine[];
  next: NextMerge | null;
  focusKey: string | null;
  onFocusKey: (key: string) => void;
  /** A message to open down the tree (a search hit); a new object opens it again. */
  reveal?: { position: number } | null;
}) {
  const { thread, lines, next } = props;
  const [opened, setOpened] = useState<Map<string, Opened>>(new Map());
  const [focused, setFocused] = useState<string | null>(null);
  const rowEls = useRef(new Map<string, HTMLElement>());

  // Another thread: nothing opened carries over.
  useEffect(() => setOpened(new Map()), [thread]);

  const set = (key: string, value: Opened | undefined) =>
    setOpened((m) => {
      const copy = new Map(m);
      if (value === undefined) copy.delete(key);
      else copy.set(key, value);
      return copy;
    });

  const load = useCallback(
    async (key: string, id: number, n: number, offset?: number): Promise<Opened> => {
      set(key, { kind: "loading" });
      let done: Opened;
      try {
        const q = `?id=${id}&n=${n}${offset !== undefined ? `&offset=${offset}` : ""}`;
        if (n === 1) {
          const body = await getJson<ZoomedMessage>(threadPath(thread, `/zoom${q}`));
          done = { kind: "message", body };
        } else {
          const body = await getJson<{ lines: ZoomLine[] }>(threadPath(thread, `/zoom${q}`));
          done = { kind: "lines", lines: body.lines };
        }
      } catch (err) {
        done = { kind: "error", message: (err as Error).message };
      }
      set(key, done);
      return done;
    },
    [thread],
  );

  // A search hit: open the lines that hold the message, from the top line down, then its card.
  const [landing, setLanding] = useState<{ card: string; top: string } | null>(null);
  const [found, setFound] = useState<string | null>(null);
  const reveal = props.reveal;
  useEffect(() => {
    if (!reveal) return;
    const covers = (l: { id: number; n: number }) =>
      reveal.position >= l.id && reveal.position < l.id + l.n;
    let cancelled = false;
    void (async () => {
      let line: { id: number; n: number } | undefined = lines.find(covers);
      const top = line && keyOf(line);
      while (line && top && !cancelled) {
        const opened = await load(keyOf(line), line.id, line.n);
        if (opened.kind === "message") {
          if (!cancelled) setLanding({ card: `${keyOf(line)}#`, top });
          return;
        }
        line = opened.kind === "lines" ? opened.lines.find(covers) : undefined;
      }
    })();
    return () => {
      cancelled = true;
    };
    // The lines as they are when the hit is opened: a live update does not open it again.
  }, [reveal, load]);

  const toggle = (row: Row, open?: boolean) => {
    if (!row.line) return;
    const isOpen = opened.has(row.key);
    if (open === false || (open === undefined && isOpen)) set(row.key, undefined);
    else if (!isOpen) void load(row.key, row.line.id, row.line.n);
  };

  // The visible rows, depth first.
  const rows: Row[] = [];
  const walk = (
    line: Row["line"] & object,
    depth: number,
    parent: string | null,
    index?: number,
  ) => {
    const key = keyOf(line);
    const row: Row = { key, depth, parent, line };
    if (index !== undefined) row.index = index;
    rows.push(row);
    const o = opened.get(key);
    if (!o) return;
    if (o.kind === "loading")
      rows.push({ key: `${key}~`, depth: depth + 1, parent: key, status: "loading" });
    else if (o.kind === "error")
      rows.push({
        key: `${key}~`,
        depth: depth + 1,
        parent: key,
        status: "error",
        error: o.message,
      });
    else if (o.kind === "message")
      rows.push({ key: `${key}#`, depth: depth + 1, parent: key, card: o.body });
    else for (const child of o.lines) walk({ ...child, level: levelOf(child.n) }, depth + 1, key);
  };
  lines.forEach((l, i) =>
    walk(
      { id: l.id, n: l.n, text: l.text, until: l.until, bytes: l.bytes, level: l.level },
      0,
      null,
      i,
    ),
  );

  const current = focused ?? props.focusKey ?? rows[0]?.key ?? null;

  // Focus the card found once it is drawn; show the way down to it as far as the box allows.
  useEffect(() => {
    if (landing === null) return;
    const el = rowEls.current.get(landing.card);
    if (!el) return;
    setLanding(null);
    setFound(landing.card);
    setFocused(landing.card);
    el.focus({ preventScroll: true });
    rowEls.current.get(landing.top)?.scrollIntoView({ block: "start" });
    el.scrollIntoView({ block: "nearest" });
  });

  useEffect(() => {
    if (props.focusKey === null) return;
    setFocused(props.focusKey);
    rowEls.current.get(props.focusKey)?.focus();
  }, [props.focusKey]);

  const move = (key: string | undefined) => {
    if (!key) return;
    setFocused(key);
    props.onFocusKey(key);
    const el = rowEls.current.get(key);
    el?.focus();
    el?.scrollIntoView({ block: "nearest" });
  };

  const onKeyDown = (e: KeyboardEvent) => {
    const at = rows.findIndex((r) => r.key === current);
    const row = rows[at];
    if (!row) return;
    const k = e.key;
    if (k === "ArrowDown" || k === "j") move(rows[at + 1]?.key);
    else if (k === "ArrowUp" || k === "k") move(rows[at - 1]?.key);
    else if (k === "Home") move(rows[0]?.key);
    else if (k === "End") move(rows.at(-1)?.key);
    else if (k === "ArrowRight" || k === "l" || k === "Enter" || k === " ") {
      if (row.line && !opened.has(row.key)) toggle(row, true);
      else if (k === "ArrowRight" || k === "l")
        move(rows[at + 1]?.parent === row.key ? rows[at + 1]?.key : undefined);
      else toggle(row, false);
    } else if (k === "ArrowLeft" || k === "h") {
      if (row.line && opened.has(row.key)) toggle(row, false);
      else move(row.parent ?? undefined);
    } else return;
    e.preventDefault();
    e.stopPropagation();
  };

  return (
    <div class="tree" role="tree" aria-label="Outline lines, oldest first" onKeyDown={onKeyDown}>
      {rows.map((row) => {
        const ref = (el: HTMLElement | null) => {
          if (el) rowEls.current.set(row.key, el);
          else rowEls.current.delete(row.key);
        };
        const indent = { paddingLeft: `${row.depth * 20 + 8}px` };
        if (row.card)
          return (
            <MessageCard
              key={row.key}
              rowRef={ref}
              card={row.card}
              depth={row.depth}
              focused={row.key === current}
              found={row.key === found}
              indent={indent}
              onPage={(offset) => {
                const parent = rows.find((r) => r.key === row.parent);
                if (parent?.line) void load(parent.key, parent.line.id, 1, offset);
              }}
              onFocus={() => setFocused(row.key)}
            />
          );
        if (row.status) {
          return (
            <div key={row.key} class={`tree-row status ${row.status}`} style={indent} role="none">
              {row.status === "loading" ? "zooming…" : row.error}
            </div>
          );
        }
        const line = row.line as NonNullable<Row["line"]>;
        const isOpen = opened.has(row.key);
        const merging =
          next &&
          row.index !== undefined &&
          (row.index === next.index || row.index === next.index + 1);
        const leftOfPair = next && row.index === next.index;
        return (
          <div
            key={row.key}
            ref={ref}
            role="treeitem"
            aria-level={row.depth + 1}
            aria-expanded={isOpen}
            aria-selected={row.key === current}
            tabIndex={row.key === current ? 0 : -1}
            data-line={row.key}
            class={`tree-row${merging ? " merging" : ""}${row.key === current ? " focused" : ""}`}
            style={indent}
            onClick={() => {
              setFocused(row.key);
              toggle(row);
            }}
            onFocus={() => setFocused(row.key)}
          >
            <span class="chevron" aria-hidden="true">
              {isOpen ? "▾" : "▸"}
            </span>
            <span class="name mono">{row.key}</span>
            <span
              class="level"
              style={{ background: levelColor(line.level) }}
              title={`level ${line.level}: ${num(line.n)} message${line.n > 1 ? "s" : ""}`}
            >
              L{line.level}
            </span>
            <span class="text">
              {leftOfPair && (
                <span
                  class="merge-badge"
                  title="The most due sibling pair: the next merge batch merges it first"
                >
                  merges next · due {next.due.toFixed(2)}
                </span>
              )}
              {line.text}
            </span>
            <span class="meta mono muted">
              {line.bytes !== undefined ? <span>{bytes(line.bytes)}</span> : null}
              <span title={`until ${line.until}: the newest message it covers`}>
                {when(line.until)}
              </span>
            </span>
          </div>
        );
      })}
    </div>
  );
}
