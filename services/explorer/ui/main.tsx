// The outline explorer: a page served by the prompt-builder at /ui/ (SPEC §8). Preact renders
// it: 4 KB of library for components and hooks, bundled by esbuild from these files (no CDN).
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { ExplorerConfig } from "../types.ts";
import { getJson, onAuthNeeded, signIn } from "./api.ts";
import { HELP_KEYS } from "./help-keys.ts";
import { useKeys } from "./keys.ts";
import { ThreadList } from "./list.tsx";
import { Link, useLocation } from "./router.tsx";
import { ThreadView } from "./thread.tsx";
import "./style.css";

function Help(props: { onClose: () => void }) {
  return (
    <div
      class="overlay"
      role="dialog"
      aria-modal="true"
      aria-labelledby="help-title"
      onClick={props.onClose}
    >
      <div class="help" onClick={(e) => e.stopPropagation()}>
        <h2 id="help-title">Keyboard</h2>
        <dl>
          {HELP_KEYS.map(([k, what]) => (
            <div key={k}>
              <dt class="mono">{k}</dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
        <button type="button" onClick={props.onClose} autoFocus>
          Close
        </button>
      </div>
    </div>
  );
}

function SignIn(props: { onDone: () => void }) {
  const [token, setToken] = useState("");
  const [failed, setFailed] = useState(false);
  return (
    <main class="sign-in">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void signIn(token.trim()).then((ok) => (ok ? props.onDone() : setFailed(true)));
        }}
      >
        <h1>outline explorer</h1>
        <p>This prompt-builder requires its API token (OUTLINE_API_TOKEN).</p>
        <input
          type="password"
          autoFocus
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          aria-label="API token"
        />
        <button type="submit">Open</button>
        {failed && <p class="error">That token is not accepted.</p>}
      </form>
    </main>
  );
}

function App() {
  const where = useLocation();
  const [needsToken, setNeedsToken] = useState(false);
  const [config, setConfig] = useState<ExplorerConfig | null>(null);
  const [help, setHelp] = useState(false);
  const [session, setSession] = useState(0);

  useEffect(() => onAuthNeeded(() => setNeedsToken(true)), []);
  useEffect(() => {
    getJson<ExplorerConfig>("/ui/api/config").then(setConfig, () => undefined);
  }, [session]);
  useKeys(useMemo(() => ({ "?": () => setHelp((h) => !h) }), []));

  const match = /^\/ui\/threads\/([^/]+)\/?$/.exec(where.pathname);
  const thread = match ? decodeURIComponent(match[1] ?? "") : null;
  useEffect(() => {
    document.title = thread ? `${thread} · outline explorer` : "threads · outline explorer";
  }, [thread]);

  if (needsToken) {
    return (
      <SignIn
        onDone={() => {
          setNeedsToken(false);
          setSession((s) => s + 1);
        }}
      />
    );
  }
  return (
    <div class="app" key={session}>
      <header class="top">
        <Link href="/ui/" class="brand">
          outline <span>explorer</span>
        </Link>
        <nav class="crumbs" aria-label="Where">
          <Link href="/ui/">Threads</Link>
          {thread && (
            <>
              <span aria-hidden="true"> / </span>
              <span class="mono">{thread}</span>
            </>
          )}
        </nav>
        <button type="button" class="ghost keys" onClick={() => setHelp(true)} title="Keyboard (?)">
          ? keys
        </button>
      </header>
      {thread ? (
        <ThreadView thread={thread} config={config} />
      ) : (
        <ThreadList search={where.search} />
      )}
      {help && <Help onClose={() => setHelp(false)} />}
    </div>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
