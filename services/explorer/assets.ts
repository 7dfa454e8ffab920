import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** One file the explorer serves under /ui/assets/. */
export interface Asset {
  body: Buffer;
  type: string;
}

export interface ExplorerAssets {
  /** By file name: `app.js`, `app.css`, `app.js.map`. */
  files: Map<string, Asset>;
  /** A hash of every file: the page asks for `app.js?v=<version>`, so a new build is fetched. */
  version: string;
}

/**
 * The page's sources: services/explorer/ui/. From TypeScript, ui/ is beside this
 * module; compiled, its code sits in dist/ at the repository's top (services/build/build.js).
 */
export const UI_SOURCES = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./ui/" : "../services/explorer/ui/", import.meta.url),
);

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
};

/**
 * Bundles the explorer's page from its sources with esbuild (Preact and the page's TypeScript
 * into one minified `app.js`, its CSS into `app.css`): in memory, in about a second, when the
 * first /ui/ request comes, so `npm start` on a fresh clone and the tests need no build step.
 * With `outdir` the files are also written there (for a build step that ships them prebuilt).
 */
export async function bundleExplorer(options: { outdir?: string } = {}): Promise<ExplorerAssets> {
  // Loaded here, not at module load: a prompt-builder nobody opens /ui/ on never loads esbuild.
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: { app: join(UI_SOURCES, "main.tsx") },
    bundle: true,
    format: "esm",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    sourcemap: "linked",
    legalComments: "none",
    write: false,
    outdir: "/ui-assets",
    logLevel: "silent",
  });
  const files = new Map<string, Asset>();
  const hash = createHash("sha256");
  for (const out of result.outputFiles) {
    const name = out.path.slice("/ui-assets/".length);
    const ext = name.slice(name.lastIndexOf("."));
    files.set(name, {
      body: Buffer.from(out.contents),
      type: TYPES[ext] ?? "application/octet-stream",
    });
    hash.update(name).update(out.contents);
  }
  if (options.outdir !== undefined) {
    await mkdir(options.outdir, { recursive: true });
    for (const [name, asset] of files) await writeFile(join(options.outdir, name), asset.body);
  }
  return { files, version: hash.digest("hex").slice(0, 16) };
}
