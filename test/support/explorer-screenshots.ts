// `npm run screenshots`: the README's pictures of the explorer, taken by Chromium from a system
// run here (its own nats-server on a free port, the worker and the prompt-builder as processes,
// search on) with a few scripted threads. Writes docs/explorer-{list,thread}-{light,dark}.png and
// docs/explorer-search-light.png at 1280 px.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import { startSearchService } from "../../services/search/service.ts";
import { startNatsServer } from "../../services/start/nats-server.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import { launchChromium } from "./browser.ts";
import { BuilderProcess } from "./builder-process.ts";
import { seedThreads, SCREENSHOT_THREADS } from "./explorer-seed.ts";
import { harness, uniqueNames, waitSettled } from "./thread-worker.ts";
import { WorkerProcess, workerEnv } from "./worker-process.ts";

const SETTINGS: CoreSettings = {
  line: 512,
  tail: [1_500, 3_000],
  outline: [6_000, 12_000],
  concurrency: 8,
};

const WIDTH = 1280;
const HEIGHT = 800;

async function shoot(page: Page, file: string): Promise<void> {
  await page.screenshot({ path: join("docs", file) });
  console.log(`wrote docs/${file}`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "outline-screens-"));
  const nats = await startNatsServer({ storeDir: join(dir, "store"), preferredPort: 0 });
  const names = uniqueNames();
  const nc = await connectNats({ url: nats.url, name: "screenshots" });
  const stops: (() => Promise<unknown>)[] = [];
  try {
    await ensureTopology(nc, names);
    const h = await harness(nc, names);
    const worker = new WorkerProcess(workerEnv(nats.url, names, SETTINGS));
    stops.push(async () => {
      worker.kill("SIGTERM");
      await worker.exited;
    });
    await worker.ready();
    // Search on: the thread page shows its box (the search service runs in this process).
    const search = await startSearchService({
      nc,
      names,
      path: join(dir, "search.db"),
      log: () => {},
    });
    stops.push(() => search.stop());
    const builder = await BuilderProcess.start(nats.url, names, SETTINGS, {
      HISTORY_SEARCH: "on",
    });
    stops.push(async () => {
      builder.child.kill("SIGTERM");
      await builder.exited;
    });
    const main = await seedThreads(h);
    await waitSettled(h, SCREENSHOT_THREADS, 120_000);

    const browser = await launchChromium();
    stops.push(() => browser.close());
    for (const scheme of ["light", "dark"] as const) {
      const page = await browser.newPage({
        viewport: { width: WIDTH, height: HEIGHT },
        colorScheme: scheme,
        deviceScaleFactor: 1,
      });
      await page.goto(`${builder.base}/ui/`);
      await page
        .locator("table.threads tbody tr")
        .nth(SCREENSHOT_THREADS.length - 1)
        .waitFor();
      await page.locator(".badge:not(:text('…'))").first().waitFor();
      await shoot(page, `explorer-list-${scheme}.png`);

      await page.goto(`${builder.base}/ui/threads/${main}`);
      const second = page.locator("[role=treeitem][data-line]").nth(1);
      await second.click();
      await page.locator("[role=treeitem][aria-level='2']").first().waitFor();
      await page.locator(".pmsg").first().waitFor();
      await page.locator(".transitions tr").first().waitFor();
      await page.mouse.move(0, 0);
      await shoot(page, `explorer-thread-${scheme}.png`);

      // A fact found by search and opened down the tree (light only: docs/explorer.md shows it).
      if (scheme === "light") {
        await page.locator(".search input").fill("passport");
        await page.locator(".hit").first().click();
        await page.locator(".tree-row.card.found").waitFor();
        await page.mouse.move(0, 0);
        await shoot(page, "explorer-search-light.png");
      }
      await page.close();
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await nc.close();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`screenshots: ${(err as Error).stack ?? String(err)}`);
    process.exit(1);
  },
);
