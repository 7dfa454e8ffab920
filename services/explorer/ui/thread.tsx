// /ui/threads/{thread}: the outline tree, the tail and the next cut, the prompt, the actor; all
// kept current by the page's live stream (a KV watch of the snapshot, the actor feed).
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type {
  ActorBody,
  ActorTransition,
  ExplorerConfig,
  LiveEvent,
  ThreadBody,
} from "../types.ts";
import { ActorBadge, ActorPanel } from "./actor.tsx";
import type { ApiError } from "../../api/api-error.ts";
import { getJson, threadPath } from "./api.ts";
import { ago, bytes, coverage, num, when } from "./format.ts";
import { useKeys } from "./keys.ts";
import { CoverageStrip, OutlineTree } from "./outline-tree.tsx";
import { PromptPanel } from "./prompt.tsx";
import { navigate } from "./router.tsx";
import { SearchBox, type Hit } from "./search.tsx";
import { TailPanel } from "./tail.tsx";

type Live = "connecting" | "live" | "down";

function Stat(props: { label: string; value: string; title?: string }) {
  return (
    <div class="stat" title={props.title}>
      <span class="value">{props.value}</span>
      <span class="label">{props.label}</span>
    </div>
  );
}

export function ThreadView(props: { thread: string; config: ExplorerConfig | null }) {
  const { thread, config } = props;
  const [body, setBody] = useState<ThreadBody | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [version, setVersion] = useState(0);
  const [live, setLive] = useState<Live>("connecting");
  const [actor, setActor] = useState<ActorBody | null>(null);
  const [transitions, setTransitions] = useState<ActorTransition[]>([]);
  const [focusKey, setFocusKey] = useState<string | null>(null);
  const [loadedAt, setLoadedAt] = useState(Date.now());
  const [, tick] = useState(0);
  const treeBox = useRef<HTMLDivElement>(null);
  const searchBox = useRef<HTMLInputElement>(null);
  // The search hit opened last: down the tree when the outline holds it, else in the tail.
  const [opened, setOpened] = useState<{ position: number; inOutline: boolean } | null>(null);

  useEffect(() => {
    setBody(null);
    setError(null);
    setActor(null);
    setTransitions([]);
    setFocusKey(null);
    setOpened(null);
  }, [thread]);

  useEffect(() => {
    const abort = new AbortController();
    getJson<ThreadBody>(threadPath(thread), abort.signal)
      .then((b) => {
        setBody(b);
        setError(null);
        setLoadedAt(Date.now());
      })
      .catch((err: Error) => err.name !== "AbortError" && setError(err as ApiError));
    return () => abort.abort();
  }, [thread, version]);

  const actorAsked = actor?.live === true ? -1 : version;
  useEffect(() => {
    const abort = new AbortController();
    getJson<ActorBody>(threadPath(thread, "/actor"), abort.signal)
      .then((a) => {
        setActor(a);
        setTransitions((seen) => (seen.length > 0 ? seen : (a.actor?.transitions ?? [])));
      })
      .catch(() => setActor({ live: false }));
    return () => abort.abort();
    // Asked again on each reload while no worker reported the actor: the feed sends its changes
    // only once the worker has the page's watch notice, which can come after the event it loads.
  }, [thread, actorAsked]);

  // Live: a snapshot write or a state change reloads what the page shows (coalesced).
  useEffect(() => {
    const source = new EventSource(threadPath(thread, "/events"));
    // At most one reload per 300 ms: a busy thread's snapshot is written many times a second.
    let pending: ReturnType<typeof setTimeout> | undefined;
    const reload = () => {
      pending ??= setTimeout(() => {
        pending = undefined;
        setVersion((v) => v + 1);
      }, 300);
    };
    source.onopen = () => setLive("live");
    source.onerror = () => setLive("down");
    source.addEventListener("snapshot", reload);
    source.addEventListener("actor", (e: MessageEvent<string>) => {
      const event = JSON.parse(e.data) as Extract<LiveEvent, { type: "actor" }>;
      const t = event.transition;
      setTransitions((seen) => [...seen.slice(-49), t]);
      setActor((a) =>
        t.to === "(stopped)"
          ? { live: false }
          : {
              live: true,
              actor: { thread, worker: a?.actor?.worker ?? "a worker", state: t.to, since: t.at },
            },
      );
      reload();
    });
    return () => {
      clearTimeout(pending);
      source.close();
    };
  }, [thread]);

  // "updated … ago" stays true.
  useEffect(() => {
    const t = setInterval(() => tick((n) => n + 1), 5_000);
    return () => clearInterval(t);
  }, []);

  useKeys(
    useMemo(
      () => ({
        Escape: () => navigate("/ui/"),
        Backspace: () => navigate("/ui/"),
        u: () => navigate("/ui/"),
        t: () =>
          (
            treeBox.current?.querySelector("[role=treeitem][tabindex='0']") as HTMLElement | null
          )?.focus(),
        "/": () => searchBox.current?.focus(),
      }),
      [],
    ),
  );

  if (error && !body) {
    return (
      <main class="thread-page">
        <h1 class="mono">{thread}</h1>
        <p class="error" role="alert">
          {error.status === 404 ? `No thread '${thread}': ${error.message}` : error.message}
        </p>
      </main>
    );
  }
  if (!body || !config)
    return (
      <main class="thread-page">
        <p class="muted">Loading {thread}…</p>
      </main>
    );

  const s = body.snapshot;
  const settings = body.settings;
  return (
    <main class="thread-page">
      <div class="thread-head">
        <div class="title">
          <h1 class="mono">{thread}</h1>
          <ActorBadge report={actor?.actor} loading={actor === null} />
          <span class={`live ${live}`} title="Updates arrive as the snapshot is written">
            {live === "live" ? "● live" : live === "down" ? "○ reconnecting" : "○ connecting"}
          </span>
          <span class="muted small">updated {ago(loadedAt)}</span>
        </div>
        <div class="stats">
          <Stat
            label="messages"
            value={num(s.count + body.tail.newer)}
            title={`${num(s.count)} in the snapshot, ${num(body.tail.newer)} stored after it`}
          />
          <Stat
            label="boundary"
            value={num(s.boundary)}
            title="the first message not in the outline"
          />
          <Stat label="lines" value={num(s.lines.length)} />
          <Stat
            label="outline"
            value={bytes(s.bytes)}
            title={`merges when past ${num(settings.outline[1])} bytes, down to ${num(settings.outline[0])}`}
          />
          <Stat label="tail" value={num(body.tail.count)} />
          <Stat label="last cut" value={when(s.cutAt)} />
          <Stat
            label="pending"
            value={`${num(s.pending.jobs)} jobs${s.pending.cuts ? ` · ${s.pending.cuts} cuts` : ""}`}
            title="summaries outstanding, and cuts waiting for them"
          />
        </div>
        {config.search && (
          <SearchBox
            thread={thread}
            inputRef={searchBox}
            onOpen={(hit: Hit) =>
              setOpened({
                position: hit.id,
                inOutline: s.lines.some((l) => hit.id >= l.id && hit.id < l.id + l.n),
              })
            }
          />
        )}
      </div>
      {error && <p class="error small">{error.message}</p>}
      <div class="columns">
        <section class="panel outline" aria-labelledby="outline-title">
          <header>
            <h2 id="outline-title">Outline</h2>
            <span class="muted small">
              {coverage(s.lines.length, s.boundary)} · {bytes(s.bytes)} of{" "}
              {bytes(settings.outline[1])}
              {s.complete ? "" : " · incomplete (started mid-thread)"}
            </span>
          </header>
          <CoverageStrip
            lines={s.lines}
            tail={body.tail.count}
            next={body.nextMerge}
            onPick={(key) => setFocusKey(key)}
          />
          <div ref={treeBox} class="tree-box">
            {s.lines.length === 0 ? (
              <p class="muted pad">Not cut yet: every message is whole in the tail.</p>
            ) : (
              <OutlineTree
                thread={thread}
                lines={s.lines}
                next={body.nextMerge}
                focusKey={focusKey}
                onFocusKey={() => undefined}
                reveal={opened?.inOutline ? opened : null}
              />
            )}
          </div>
        </section>
        <div class="side">
          <ActorPanel report={actor?.actor} transitions={transitions} loaded={actor !== null} />
          <TailPanel
            thread={thread}
            body={body}
            settings={settings}
            version={version}
            reveal={opened && !opened.inOutline ? opened : null}
          />
          <PromptPanel
            thread={thread}
            snapshot={s}
            settings={settings}
            next={body.nextMerge}
            leaving={body.tail.cut.leaving}
            version={version}
          />
        </div>
      </div>
    </main>
  );
}
