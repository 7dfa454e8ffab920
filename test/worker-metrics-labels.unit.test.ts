import { describe, expect, it } from "vitest";
import { labelSamples } from "../services/thread-worker/metrics-endpoint.ts";

describe("labelSamples (metrics per member)", () => {
  it("adds the label to every sample, with or without labels, and leaves comments alone", () => {
    const text = [
      "# HELP outline_worker_lag events not delivered",
      "# TYPE outline_worker_lag gauge",
      "outline_worker_lag 3",
      'outline_worker_events_applied_total{kind="message"} 12',
      "",
    ].join("\n");
    expect(labelSamples(text, "member", 'h-1"x')).toBe(
      [
        "# HELP outline_worker_lag events not delivered",
        "# TYPE outline_worker_lag gauge",
        'outline_worker_lag{member="h-1\\"x"} 3',
        'outline_worker_events_applied_total{member="h-1\\"x",kind="message"} 12',
        "",
      ].join("\n"),
    );
  });
});
