import { readdirSync } from "node:fs";
import { join } from "node:path";
import { ESLint } from "eslint";
import tseslint from "typescript-eslint";
import { describe, expect, it } from "vitest";
import { LAYERS, layerConfigs } from "../eslint.layers.js";

const ROOT = join(import.meta.dirname, "..");

// The layer rules alone, applied to snippets as if they lived in the folder named.
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [
    { files: ["**/*.{ts,tsx}"], languageOptions: { parser: tseslint.parser } },
    ...layerConfigs(),
  ],
});

async function problems(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, filePath) });
  return (result?.messages ?? []).map((m) => m.message);
}

describe("imports run down the layers (ESLint rule)", () => {
  it.each([
    // Each once ran up, before services/api/ and the moves to services/nats/.
    ["services/cluster/x.ts", "../thread-worker/buckets.ts", /below services\/thread-worker/],
    ["services/thread-worker/x.ts", "../prompt-builder/api-error.ts", /share a layer/],
    ["services/cluster/x.ts", "../prompt-builder/api-error.ts", /below services\/prompt-builder/],
    ["services/start/x.ts", "../prompt-builder/access.ts", /share a layer/],
    ["services/search/x.ts", "../prompt-builder/nats-api.ts", /below services\/prompt-builder/],
    ["services/explorer/x.ts", "../prompt-builder/operations.ts", /below/],
    // From a subfolder, from the top, and through `./`.
    ["services/explorer/ui/x.tsx", "../../prompt-builder/operations.ts", /below/],
    ["services/api/x.ts", "../../services/nats/reader.ts", /below services\/nats/],
    ["services/nats/x.ts", "./../cli/ask.ts", /below services\/cli/],
    ["machines/x.ts", "../services/nats/subjects.ts", /below services\/nats/],
    ["shared/x.ts", "../machines/thread.ts", /below machines/],
    ["services/cli/x.ts", "../../bench/main.ts", /below bench/],
    ["services/chat/x.ts", "../demo/main.ts", /share a layer/],
  ])("refuses %s importing %s", async (file, spec, reason) => {
    const found = await problems(file, `import { x } from "${spec}";\nexport { x };\n`);
    expect(
      found.some((m) => reason.test(m)),
      found.join("; "),
    ).toBe(true);
  });

  it("refuses a re-export and an import() that run up", async () => {
    expect(
      await problems("services/nats/x.ts", 'export { a } from "../prompt-builder/http.ts";'),
    ).toEqual([expect.stringMatching(/below services\/prompt-builder/)]);
    expect(
      await problems(
        "services/summarizer/x.ts",
        'export const w = () => import("../thread-worker/worker.ts");',
      ),
    ).toEqual([expect.stringMatching(/below services\/thread-worker/)]);
  });

  it("keeps shared/ pure as well", async () => {
    expect(await problems("shared/x.ts", 'import { readFileSync } from "node:fs";')).toEqual([
      expect.stringMatching(/pure core/),
    ]);
    expect(await problems("shared/x.ts", "export const now = new Date();")).toEqual([
      expect.stringMatching(/no clock/),
    ]);
  });

  it("accepts imports of lower layers, of the folder itself and of packages", async () => {
    const code = [
      'import { ApiError } from "../api/api-error.ts";',
      'import { createReader } from "../nats/reader.ts";',
      'import { sleep } from "../util/wait.ts";',
      'import { threadSubject } from "../../services/nats/subjects.ts";',
      'import type { Message } from "../../shared/events.ts";',
      'import { createOperations } from "./operations.ts";',
      'import { connect } from "@nats-io/transport-node";',
      "export const all = [ApiError, createReader, sleep, threadSubject, createOperations, connect];",
      "export type M = Message;",
    ].join("\n");
    expect(await problems("services/prompt-builder/x.ts", code)).toEqual([]);
    // A subfolder's `../` names its own folder's files.
    expect(
      await problems("services/cli/replay/x.ts", 'export { search } from "../search.ts";'),
    ).toEqual([]);
  });

  it("places every folder of services/ in a layer", () => {
    const layered = new Set(LAYERS.flat());
    const folders = readdirSync(join(ROOT, "services"), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => `services/${d.name}`);
    expect(folders.filter((f) => !layered.has(f))).toEqual([]);
  });
});
