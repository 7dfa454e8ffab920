import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { chromium, type Browser } from "playwright-core";

// The browser tests drive Debian's chromium (nothing downloads a browser here): found on the PATH
// or named by OUTLINE_CHROMIUM. Missing, they fail with what to install; they never skip.

const NAMES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];

/** Flags that work on this kind of machine: headless, no sandbox (root in CI), nothing phoning home. */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function chromiumPath(): string {
  const named = process.env.OUTLINE_CHROMIUM;
  if (named) {
    if (executable(named)) return named;
    throw new Error(`OUTLINE_CHROMIUM=${named} is not an executable file`);
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    for (const name of NAMES) {
      const candidate = join(dir, name);
      if (dir && executable(candidate)) return candidate;
    }
  }
  throw new Error(
    "the browser tests need Chromium and none was found on the PATH (chromium, chromium-browser, google-chrome): install it (Debian: apt-get install -y chromium; .ci/run does) or set OUTLINE_CHROMIUM to its path",
  );
}

/** A headless Chromium; Playwright gives it a fresh profile (--user-data-dir) of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_FLAGS });
}
