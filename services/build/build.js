// @ts-check
// Compiles the services and the CLI to JavaScript in dist/ with esbuild, so they start without
// a TypeScript loader (`outline --help` in a fraction of the time tsx takes). `npm ci` builds
// through `prepare`; `npm start` and `npx outline` rebuild first when a source changed since.
// The tests' e2e tier runs dist/ too (their global setup builds it). Plain JavaScript: it runs
// before anything is compiled.
import {
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The repository: two folders up from this file. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * What is compiled, by output name: one file each in dist/, beside the chunks they share. The
 * summarizer's pool starts its worker threads from `extract-thread.js` beside its own code, and
 * nats-server.ts its lifeline from `nats-lifeline.js`; everything lands in one folder, so they
 * are found wherever esbuild puts the code that starts them.
 */
export const ENTRIES = {
  cli: "services/cli/main.ts",
  start: "services/start/main.ts",
  "thread-worker": "services/thread-worker/main.ts",
  "prompt-builder": "services/prompt-builder/main.ts",
  search: "services/search/main.ts",
  "extract-thread": "services/summarizer/extract-thread.ts",
  "nats-lifeline": "services/start/nats-lifeline.js",
  // `outline/client` (package.json exports), with the declarations of DECLARED beside it.
  client: "services/client/client.ts",
};

/**
 * The files whose types `outline/client` exposes: each declared alone (isolated declarations),
 * so they import nothing but each other. dist/types/ mirrors their paths.
 */
export const DECLARED = [
  "services/client/client.ts",
  "services/client/http.ts",
  "services/client/nats.ts",
  "services/client/transport.ts",
  "services/api/api-error.ts",
  "shared/api.ts",
];

/** @param {string} outdir @param {string} path */
const declarationOf = (outdir, path) => join(outdir, "types", path.replace(/\.ts$/, ".d.ts"));

/**
 * Writes `dist/types/<path>.d.ts` for each of DECLARED older than its source, with `.ts` imports
 * as `.js` (what a consumer's TypeScript resolves to the `.d.ts` beside it). Only then is
 * TypeScript loaded: that takes seconds, more than the rest of a build. Without TypeScript
 * installed (an install without devDependencies) the client runs, untyped: said, not fatal.
 * @param {string} root
 * @param {string} outdir
 */
async function declare(root, outdir) {
  const stale = DECLARED.filter((path) => {
    try {
      return statSync(declarationOf(outdir, path)).mtimeMs < statSync(join(root, path)).mtimeMs;
    } catch {
      return true;
    }
  });
  if (stale.length === 0) return;
  /** @type {typeof import("typescript") | undefined} */
  let ts;
  try {
    ts = (await import("typescript")).default;
  } catch {
    process.stderr.write("outline: typescript is not installed: outline/client has no types\n");
    return;
  }
  for (const path of stale) {
    const source = readFileSync(join(root, path), "utf8");
    const out = ts.transpileDeclaration(source, {
      fileName: path,
      compilerOptions: { module: ts.ModuleKind.NodeNext, target: ts.ScriptTarget.ES2022 },
      reportDiagnostics: true,
    });
    const problem = out.diagnostics?.[0];
    if (problem) {
      const text = ts.flattenDiagnosticMessageText(problem.messageText, "\n");
      throw new Error(`${path}: cannot be declared on its own: ${text}`);
    }
    const file = declarationOf(outdir, path);
    mkdirSync(dirname(file), { recursive: true });
    // Whole or not at all for a type-checker reading it meanwhile.
    writeFileSync(
      `${file}.tmp`,
      out.outputText.replace(/(from\s+["']\.{1,2}\/[^"']*)\.ts(["'])/g, "$1.js$2"),
    );
    renameSync(`${file}.tmp`, file);
  }
}

const MANIFEST = "build.json";
// Chunks a running process may still import lazily (a CLI command, a summarizer thread) are kept
// this long after a newer build replaced them.
const KEEP_OLD_MS = 60 * 60 * 1000;

/**
 * @typedef {{ inputs: [string, number, number][] }} Manifest
 *   every source the build read (path from the root, mtime, size), to tell when it is stale
 */

/** @param {string} outdir */
function readManifest(outdir) {
  try {
    return /** @type {Manifest} */ (JSON.parse(readFileSync(join(outdir, MANIFEST), "utf8")));
  } catch {
    return undefined;
  }
}

/**
 * True when `outdir` holds a build of the sources as they are now.
 * @param {string} [root]
 * @param {string} [outdir]
 */
export function isFresh(root = ROOT, outdir = join(root, "dist")) {
  const manifest = readManifest(outdir);
  if (!manifest) return false;
  for (const [path, mtime, size] of manifest.inputs) {
    try {
      const stat = statSync(join(root, path));
      if (stat.mtimeMs !== mtime || stat.size !== size) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Builds into a private folder, then moves the files into dist/ (chunks before the entries that
 * import them, each by an atomic rename), so a process starting meanwhile loads a whole build.
 * @param {{ root?: string, outdir?: string }} [options]
 */
export async function build({ root = ROOT, outdir = join(root, "dist") } = {}) {
  const { build: esbuild } = await import("esbuild");
  mkdirSync(outdir, { recursive: true });
  const tmp = join(outdir, `.tmp-${process.pid}-${Date.now().toString(36)}`);
  try {
    const result = await esbuild({
      absWorkingDir: root,
      entryPoints: Object.fromEntries(
        Object.entries(ENTRIES).map(([name, entry]) => [name, join(root, entry)]),
      ),
      outdir: tmp,
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20",
      // Dependencies load from node_modules as they are (native addons, esbuild itself).
      packages: "external",
      chunkNames: "chunk-[hash]",
      sourcemap: "linked",
      metafile: true,
      logLevel: "warning",
    });
    const outputs = readdirSync(tmp);
    const entries = new Set(Object.keys(ENTRIES).flatMap((n) => [`${n}.js`, `${n}.js.map`]));
    for (const file of [...outputs.filter((f) => !entries.has(f)), ...entries]) {
      if (outputs.includes(file)) renameSync(join(tmp, file), join(outdir, file));
    }
    await declare(root, outdir);
    const self = relative(root, fileURLToPath(import.meta.url));
    const inputs = new Set([
      ...Object.keys(result.metafile.inputs).filter((p) => !p.includes("node_modules")),
      self,
      ...DECLARED,
    ]);
    /** @type {Manifest} */
    const manifest = {
      inputs: [...inputs].map((path) => {
        const stat = statSync(join(root, path));
        return [path, stat.mtimeMs, stat.size];
      }),
    };
    writeFileSync(join(tmp, MANIFEST), `${JSON.stringify(manifest)}\n`);
    renameSync(join(tmp, MANIFEST), join(outdir, MANIFEST));
    const now = Date.now();
    for (const file of readdirSync(outdir)) {
      if (!file.startsWith("chunk-") || outputs.includes(file)) continue;
      if (now - statSync(join(outdir, file)).mtimeMs > KEEP_OLD_MS)
        rmSync(join(outdir, file), { force: true });
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The compiled file of an entry, rebuilt first when the sources changed; undefined when it
 * cannot be built (the caller runs the TypeScript source instead, and says why).
 * @param {keyof typeof ENTRIES} name
 * @param {string} [root]
 */
export async function compiled(name, root = ROOT) {
  if (!isFresh(root)) {
    try {
      await build({ root });
    } catch (err) {
      process.stderr.write(
        `outline: could not compile the sources into dist/ (${err instanceof Error ? err.message : String(err)}); running them through tsx\n`,
      );
      return undefined;
    }
  }
  return pathToFileURL(join(root, "dist", `${name}.js`)).href;
}

/**
 * Runs an entry compiled (see `compiled`), or its TypeScript source through tsx when
 * OUTLINE_FROM_SOURCES=1 or when it cannot be compiled.
 * @param {keyof typeof ENTRIES} name
 */
export async function launch(name) {
  const entry = process.env.OUTLINE_FROM_SOURCES === "1" ? undefined : await compiled(name);
  if (entry !== undefined) {
    await import(entry);
    return;
  }
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(join(ROOT, ENTRIES[name])).href);
}

// `node services/build/build.js`: npm's prepare, `npm run build`.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  await build();
  process.stdout.write(
    `outline: compiled ${Object.keys(ENTRIES).length} entries into dist/ in ${Date.now() - started} ms\n`,
  );
}
