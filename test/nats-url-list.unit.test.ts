import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SettingsError } from "../shared/errors.ts";
import { parseSettings } from "../shared/settings.ts";

// NATS_URL may list the servers of a cluster (SPEC §9): each entry is checked alone.
function refusal(natsUrl: string): SettingsError {
  try {
    parseSettings({ NATS_URL: natsUrl });
  } catch (err) {
    if (err instanceof SettingsError) return err;
    throw err;
  }
  throw new Error(`NATS_URL '${natsUrl}' was accepted`);
}

const host = fc.oneof(
  fc.constantFrom("127.0.0.1", "localhost", "nats-1.internal", "a_b"),
  fc.stringMatching(/^[a-z][a-z0-9.-]{0,12}$/),
);
const port = fc.integer({ min: 1, max: 65_535 });
/** One server as NATS_URL takes it: `scheme://host:port` or `host:port`. */
const server = fc.oneof(
  fc.tuple(host, port).map(([h, p]) => `${h}:${p}`),
  fc
    .tuple(fc.constantFrom("nats", "tls", "ws", "wss"), host, port)
    .map(([scheme, h, p]) => `${scheme}://${h}:${p}`),
);
const blank = fc.constantFrom("", " ", "  ", "\t");
/** Entries that are no server. */
const bad = fc.constantFrom("junk", "http://x:1", "nats://", "nats://a b:1", "a:b", "", ":4222");

describe("NATS_URL", () => {
  it("takes the audit's lists and refuses the bad entry, naming it", () => {
    expect(parseSettings({ NATS_URL: "nats://a:1, nats://b:2" }).natsUrl).toBe(
      "nats://a:1,nats://b:2",
    );
    expect(parseSettings({ NATS_URL: "127.0.0.1:24222,127.0.0.1:24223" }).natsUrl).toBe(
      "127.0.0.1:24222,127.0.0.1:24223",
    );
    const err = refusal("nats://127.0.0.1:24222,junk");
    expect(err.setting).toBe("NATS_URL");
    expect(err.message).toContain("'junk' (server 2 of 2 in 'nats://127.0.0.1:24222,junk')");
    expect(refusal("nats://a:1,,nats://b:2").message).toContain("an empty entry (server 2 of 3");
    expect(refusal("http://x").message).toMatch(/^NATS_URL: 'http:\/\/x' is not a NATS URL/);
  });

  it("accepts any list of servers, blanks around commas, and keeps it without them", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(blank, server, blank), { minLength: 1, maxLength: 6 }),
        (entries) => {
          const raw = entries.map(([before, s, after]) => `${before}${s}${after}`).join(",");
          expect(parseSettings({ NATS_URL: raw }).natsUrl).toBe(
            entries.map(([, s]) => s).join(","),
          );
        },
      ),
    );
  });

  it("refuses a list with one bad entry anywhere, and names that entry and its place", () => {
    fc.assert(
      fc.property(
        fc.array(server, { minLength: 0, maxLength: 5 }),
        bad,
        fc.nat(),
        (good, wrong, at) => {
          const i = at % (good.length + 1);
          const entries = [...good.slice(0, i), wrong, ...good.slice(i)];
          const raw = entries.join(",");
          // A list that is only blanks is NATS_URL unset, not a bad list.
          fc.pre(raw.trim() !== "");
          const err = refusal(raw);
          expect(err.setting).toBe("NATS_URL");
          expect(err.message).toContain(wrong === "" ? "an empty entry" : `'${wrong}'`);
          if (entries.length > 1)
            expect(err.message).toContain(`(server ${i + 1} of ${entries.length} in '${raw}')`);
        },
      ),
    );
  });
});
