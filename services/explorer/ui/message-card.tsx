// A message card of the outline tree: the message whole under its leaf, paged when long.
import { num, when } from "./format.ts";

export interface ZoomedMessage {
  message: {
    id: string;
    position: number;
    from: string;
    to?: string;
    role: string;
    at: string;
    text: string;
    steps?: unknown[];
  };
  page: { offset: number; limit: number; total: number; next: number | null };
  note?: string;
}

/** A message opened under its leaf: whole, or a page of it when long. */
export function MessageCard(props: {
  card: ZoomedMessage;
  depth: number;
  rowRef: (el: HTMLElement | null) => void;
  focused: boolean;
  /** Opened from a search hit. */
  found: boolean;
  indent: Record<string, string>;
  onPage: (offset: number) => void;
  onFocus: () => void;
}) {
  const { message, page, note } = props.card;
  const end = page.offset + message.text.length;
  return (
    <div
      ref={props.rowRef}
      role="treeitem"
      aria-level={props.depth + 1}
      tabIndex={props.focused ? 0 : -1}
      class={`tree-row card${props.focused ? " focused" : ""}${props.found ? " found" : ""}`}
      style={props.indent}
      onFocus={props.onFocus}
      data-message={message.id}
    >
      <div class="card-head">
        <span class="mono">message {num(message.position)}</span>
        <span class="who">
          {message.from}
          {message.to ? ` → ${message.to}` : ""}
        </span>
        <span class="badge rest">{message.role}</span>
        <span class="muted mono">{when(message.at)}</span>
        <span class="muted mono small">id {message.id}</span>
      </div>
      <pre class="message-text">{message.text}</pre>
      {message.steps && message.steps.length > 0 && (
        <details>
          <summary>
            {message.steps.length} tool step{message.steps.length > 1 ? "s" : ""}
          </summary>
          <pre class="message-text">{JSON.stringify(message.steps, null, 2)}</pre>
        </details>
      )}
      {(page.offset > 0 || page.next !== null) && (
        <div class="card-pager">
          <button
            type="button"
            disabled={page.offset === 0}
            onClick={() => props.onPage(Math.max(0, page.offset - page.limit))}
          >
            ‹ Previous page
          </button>
          <span class="muted small">
            characters {num(page.offset)}–{num(end)} of {num(page.total)}
          </span>
          <button
            type="button"
            disabled={page.next === null}
            onClick={() => page.next !== null && props.onPage(page.next)}
          >
            Next page ›
          </button>
        </div>
      )}
      {note && <p class="muted small">{note}</p>}
    </div>
  );
}
