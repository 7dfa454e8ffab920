// The file a bench runs for a service: compiled, as `npm start` and the Docker image run it
// (dist/, rebuilt first when a source changed), so the figures are those of what is deployed.
// OUTLINE_FROM_SOURCES=1 runs the TypeScript through tsx instead, as `npm start` does with it.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The services a bench starts as processes of their own. */
export type ServiceName = "thread-worker";

const SOURCES: Record<ServiceName, string> = {
  "thread-worker": "services/thread-worker/main.ts",
};

const OWN_ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

interface BuildModule {
  compiled(name: string): Promise<string | undefined>;
}

/**
 * The path of `name`'s entry in the checkout at `root` (this one by default; a base checkout of
 * an A/B builds with its own build script). A checkout without a build script, or one whose
 * build fails (it says why on stderr), runs its TypeScript source.
 */
export async function serviceEntry(name: ServiceName, root = OWN_ROOT): Promise<string> {
  const source = join(root, SOURCES[name]);
  const script = join(root, "services/build/build.js");
  if (process.env.OUTLINE_FROM_SOURCES === "1" || !existsSync(script)) return source;
  const build = (await import(pathToFileURL(script).href)) as BuildModule;
  const entry = await build.compiled(name);
  return entry === undefined ? source : fileURLToPath(entry);
}
