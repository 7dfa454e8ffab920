// The thread actor: its state now and its last transitions, from the workers' actor feed.
import type { ActorReport, ActorTransition } from "../types.ts";
import { ago, clock, num } from "./format.ts";

/** A colour per kind of state: at rest, working, waiting, gone. */
export function stateTone(state: string): string {
  const s = state.toLowerCase();
  if (s.includes("delet") || s.includes("eras") || s.includes("stopped")) return "gone";
  if (s.includes("cut") || s.includes("merg") || s.includes("hold") || s.includes("backlog"))
    return "waiting";
  if (s.includes("summar") || s.includes("load")) return "working";
  if (s.includes("passiv") || s.includes("drain") || s.includes("ended")) return "asleep";
  return "rest";
}

/** A state's name, free to wrap between its regions (`slot.open,<wbr>thread.active.idle`). */
function StateName(props: { name: string }) {
  const parts = props.name.split(",");
  return <>{parts.map((part, i) => (i === 0 ? part : [",", <wbr key={i} />, part]))}</>;
}

export function ActorBadge(props: { report: ActorReport | undefined; loading?: boolean }) {
  if (props.loading) return <span class="badge asleep">…</span>;
  if (!props.report) {
    return (
      <span
        class="badge asleep"
        title="No worker holds this thread's actor in memory now (passivated when idle, or not loaded yet)"
      >
        not in memory
      </span>
    );
  }
  const r = props.report;
  return (
    <span class={`badge ${stateTone(r.state)}`} title={`on ${r.worker} since ${ago(r.since)}`}>
      <StateName name={r.state} />
    </span>
  );
}

export function ActorPanel(props: {
  report: ActorReport | undefined;
  transitions: ActorTransition[];
  loaded: boolean;
}) {
  const { report, transitions } = props;
  const shown = transitions.slice(-12).reverse();
  return (
    <section class="panel actor" aria-labelledby="actor-title">
      <header>
        <h2 id="actor-title">Actor</h2>
        {props.loaded ? (
          <ActorBadge report={report} />
        ) : (
          <span class="muted small">asking the workers…</span>
        )}
        {report && (
          <span class="muted small">
            on {report.worker}, since {ago(report.since)}
          </span>
        )}
      </header>
      {props.loaded && !report && shown.length === 0 && (
        <p class="muted small pad">
          No worker holds this thread's actor now: it is loaded again by its next event. Its
          transitions show here live while the page is open.
        </p>
      )}
      {shown.length > 0 && (
        <div class="transitions-box">
          <table class="transitions" aria-label="Last transitions, newest first">
            <tbody>
              {shown.map((t, i) => (
                <tr key={`${t.at}-${i}`}>
                  <td class="mono muted">{clock(t.at)}</td>
                  <td class="mono states">
                    <span class={`state ${stateTone(t.from)}`}>
                      <StateName name={t.from} />
                    </span>
                    <span class="arrow"> → </span>
                    <span class={`state ${stateTone(t.to)}`}>
                      <StateName name={t.to} />
                    </span>
                  </td>
                  <td class="mono event" title={t.event}>
                    {t.event}
                  </td>
                  <td
                    class="num muted"
                    title={
                      t.lines !== undefined ? `${num(t.lines)} outline lines after it` : undefined
                    }
                  >
                    {t.count !== undefined ? `${num(t.count)} msg` : ""}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
