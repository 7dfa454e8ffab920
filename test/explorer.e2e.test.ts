import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import type { Message } from "../shared/events.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { startSearchService, type SearchService } from "../services/search/service.ts";
import { launchChromium } from "./support/browser.ts";
import { BuilderProcess } from "./support/builder-process.ts";
import {
  chatMessage,
  harness,
  publishMessage,
  readSnapshot,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { WorkerProcess, workerEnv } from "./support/worker-process.ts";

// The explorer in a real browser (Debian's chromium through playwright-core): the list, a
// thread, the way down from a top line to a message, a live update, the keyboard, the token.
// The system runs as processes (worker, prompt-builder) on the run's nats-server.

const names = uniqueNames();
const A = "explore-a";
const B = "explore-b";
const C = "explore-c";
/** A message long enough to be paged (zoom pages at 25,000 characters). */
const BIG_AT = 3;
const BIG = Array.from({ length: 3_000 }, (_, i) => `line ${i} of the long report.`).join(" ");
/** Facts planted in A for the search box: one deep in the outline, one in the tail. */
const FACT_AT = 37;
const FACT = "Ana says the locker code is 4711, keep it quiet";
const TAIL_FACT_AT = 239;
const TAIL_FACT = "the courier waits at gate B-12";
const PLANTED: Record<number, string> = {
  [BIG_AT]: BIG,
  [FACT_AT]: FACT,
  [TAIL_FACT_AT]: TAIL_FACT,
};

let h: Harness;
let worker: WorkerProcess;
let builder: BuilderProcess;
let browser: Browser;
let search: SearchService;
let searchDir: string;
const errors: string[] = [];

async function openPage(colorScheme: "light" | "dark" = "light"): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme });
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (err) => errors.push(`page: ${err.message}`));
  return page;
}

/** One attribute of every element a locator finds, in order. */
async function attributes(found: Locator, name: string): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (let i = 0, n = await found.count(); i < n; i++)
    out.push(await found.nth(i).getAttribute(name));
  return out;
}

const original = (thread: string, position: number): Message =>
  h.log.get(thread)?.[position]?.message as Message;

beforeAll(async () => {
  const url = inject("natsUrl");
  const nc = await connectNats({ url, name: "explorer-e2e" });
  await ensureTopology(nc, names);
  h = await harness(nc, names);
  worker = new WorkerProcess(workerEnv(url, names, SMALL));
  await worker.ready();
  // Search on: the page shows its box; the search service (in this process) indexes CHAT.
  searchDir = mkdtempSync(join(tmpdir(), "outline-explorer-search-"));
  search = await startSearchService({
    nc,
    names,
    path: join(searchDir, "search.db"),
    log: () => {},
    idleCheckMs: 200,
  });
  builder = await BuilderProcess.start(url, names, SMALL, { HISTORY_SEARCH: "on" });
  for (let i = 0; i < 240; i++) {
    const m = chatMessage(A, i);
    const text = PLANTED[i];
    await publishMessage(h, text === undefined ? m : { ...m, text });
  }
  for (let i = 0; i < 12; i++) await publishMessage(h, chatMessage(C, i));
  for (let i = 0; i < 6; i++) await publishMessage(h, chatMessage(B, i));
  await waitSettled(h, [A, B, C], 120_000);
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  for (const p of [worker, builder]) {
    if (p && p.child.exitCode === null) {
      p.child.kill("SIGTERM");
      await p.exited;
    }
  }
  await search?.stop();
  await h?.nc.close();
  if (searchDir) rmSync(searchDir, { recursive: true, force: true });
});

/** Clicks down from the top line holding `position` to the message, one zoom per level. */
async function openDownTo(page: Page, position: number): Promise<void> {
  for (let level = 1; ; level++) {
    const rows = page.locator(`[role=treeitem][aria-level='${level}'][data-line]`);
    await rows.first().waitFor();
    const names = await attributes(rows, "data-line");
    const index = names.findIndex((name) => {
      const [id, n] = (name ?? "").split("+").map(Number) as [number, number];
      return position >= id && position < id + n;
    });
    expect(index, `a line at level ${level} covering message ${position}`).toBeGreaterThanOrEqual(
      0,
    );
    await rows.nth(index).click();
    if ((names[index] ?? "").endsWith("+1")) return;
  }
}

describe("the explorer in Chromium", () => {
  it("lists the threads most recently written first, with their figures", async () => {
    // B's snapshot was written last, until a message to C makes C's the newest.
    await publishMessage(h, chatMessage(C, 12));
    await waitFor(
      "C's snapshot of 13",
      async () => (await readSnapshot(h, C))?.count === 13,
      20_000,
    );
    const page = await openPage();
    await page.goto(`${builder.base}/ui/`);
    const rows = page.locator("table.threads tbody tr");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
    const ids = await page.locator("table.threads tbody td.thread-id").allInnerTexts();
    expect(ids[0]).toBe(C);
    expect(ids).toEqual(expect.arrayContaining([A, B, C]));
    const snapshot = (await readSnapshot(h, A)) as OutlineSnapshot;
    const rowA = rows.filter({ hasText: A });
    const cells = await rowA.locator("td").allInnerTexts();
    expect(cells[2]).toBe(snapshot.count.toLocaleString("en-US"));
    expect(cells[4]).toBe(String(snapshot.lines.length));

    // The filter matches on the thread id, any part of it, in any case.
    await page.locator(".filter input").fill("PLORE-b");
    await expect
      .poll(() => page.locator("table.threads tbody td.thread-id").allInnerTexts())
      .toEqual([B]);
    await page.close();
  });

  it("opens a thread: its outline lines, the tail with the next cut, the prompt", async () => {
    const page = await openPage();
    await page.goto(`${builder.base}/ui/`);
    await page.locator(`a[href='/ui/threads/${A}']`).click();
    await page.waitForURL(`${builder.base}/ui/threads/${A}`);
    await expect.poll(() => page.locator("h1").innerText()).toBe(A);
    const snapshot = (await readSnapshot(h, A)) as OutlineSnapshot;
    const tops = page.locator("[role=treeitem][aria-level='1'][data-line]");
    await expect
      .poll(() => attributes(tops, "data-line"))
      .toEqual(snapshot.lines.map((l) => `${l.id}+${l.n}`));
    // The tail lists the messages still whole, each with its cost.
    const tail = page.locator(".tail-row");
    await expect.poll(() => tail.count()).toBe(Math.min(50, snapshot.tail.length));
    // The prompt shows where the cache boundary falls; Anthropic's marks as sent.
    await page.locator("[data-boundary]").first().waitFor();
    await page.getByRole("button", { name: "Anthropic" }).click();
    const marks = page.locator(".cache-mark");
    await marks.first().waitFor();
    const api = (await builder.get(`/threads/${A}/prompt?format=anthropic`)).body as {
      messages: { content: string | { cache_control?: unknown }[] }[];
    };
    const sent = (api.messages[0]?.content as { cache_control?: unknown }[]).filter(
      (b) => b.cache_control,
    ).length;
    expect(await marks.count()).toBe(sent);
    await page.close();
  });

  it("clicks down from a top line to the original message, and pages a long one", async () => {
    const page = await openPage();
    await page.goto(`${builder.base}/ui/threads/${A}`);
    await openDownTo(page, 0);
    const card = page.locator("[data-message]");
    await card.waitFor();
    expect(await card.getAttribute("data-message")).toBe(original(A, 0).id);
    expect(await card.locator(".message-text").innerText()).toBe(original(A, 0).text);

    await page.reload();
    await openDownTo(page, BIG_AT);
    const big = page.locator(`[data-message='${original(A, BIG_AT).id}']`);
    await big.waitFor();
    expect(await big.locator(".message-text").innerText()).toBe(BIG.slice(0, 25_000));
    await big.getByRole("button", { name: "Next page ›" }).click();
    await expect
      .poll(() => big.locator(".message-text").innerText())
      .toBe(BIG.slice(25_000, 50_000));
    await page.close();
  });

  it("walks the list and the tree with the keyboard", async () => {
    const page = await openPage();
    await page.goto(`${builder.base}/ui/?filter=explore-a`);
    await page.locator("table.threads tbody tr").first().waitFor();
    // ? lists the keys, g (the newest page) among them; ? again closes it.
    await page.keyboard.press("?");
    const help = page.getByRole("dialog", { name: "Keyboard" });
    await expect.poll(() => help.locator("dt").allInnerTexts()).toContain("g");
    await page.keyboard.press("?");
    await expect.poll(() => help.count()).toBe(0);
    await page.keyboard.press("Enter");
    await page.waitForURL(`${builder.base}/ui/threads/${A}`);
    await page.locator("[role=treeitem]").first().waitFor();
    await page.keyboard.press("t");
    await page.keyboard.press("ArrowRight");
    await page.locator("[role=treeitem][aria-level='2']").first().waitFor();
    await page.keyboard.press("ArrowRight");
    await expect.poll(() => page.locator(":focus").getAttribute("aria-level")).toBe("2");
    await page.keyboard.press("ArrowLeft");
    await expect.poll(() => page.locator(":focus").getAttribute("aria-level")).toBe("1");
    await page.keyboard.press("Escape");
    await page.waitForURL(`${builder.base}/ui/`);
    await page.close();
  });

  it("searches the thread's messages and opens a hit where it is", async () => {
    const snapshot = (await readSnapshot(h, A)) as OutlineSnapshot;
    const top = snapshot.lines.find((l) => FACT_AT >= l.id && FACT_AT < l.id + l.n);
    expect(top, "the fact is down the outline's tree").toBeDefined();
    expect(TAIL_FACT_AT, "the other fact is in the tail").toBeGreaterThanOrEqual(snapshot.boundary);
    const page = await openPage();
    await page.goto(`${builder.base}/ui/threads/${A}`);
    await page.locator("[role=treeitem]").first().waitFor();
    // `/` puts the focus in the search box; the hit names the top line that holds the message.
    await page.keyboard.press("/");
    await page.keyboard.type("LOCKER CODE");
    const hit = page.locator(".hit");
    await expect
      .poll(() => attributes(hit, "data-hit"), { timeout: 15_000 })
      .toEqual([String(FACT_AT)]);
    expect(await hit.innerText()).toContain(`in ${top?.id}+${top?.n}`);
    expect(await hit.locator(".preview").innerText()).toContain("«locker code»");
    await hit.click();
    // Opened down the tree, one line per level, to the message whole, which has the focus.
    const card = page.locator(`[data-message='${original(A, FACT_AT).id}']`);
    await card.waitFor();
    expect(await card.locator(".message-text").innerText()).toBe(FACT);
    await expect
      .poll(() => page.locator(":focus").getAttribute("data-message"))
      .toBe(original(A, FACT_AT).id);
    const opened = await attributes(
      page.locator("[role=treeitem][aria-expanded=true]"),
      "data-line",
    );
    expect(opened[0]).toBe(`${top?.id}+${top?.n}`);
    expect(opened.at(-1)).toBe(`${FACT_AT}+1`);
    expect(await card.getAttribute("aria-level")).toBe(String(opened.length + 1));

    // A hit in the tail opens there; the keyboard reaches it from the field.
    await page.locator(".search input").fill("gate b-12");
    await expect
      .poll(() => attributes(hit, "data-hit"), { timeout: 15_000 })
      .toEqual([String(TAIL_FACT_AT)]);
    expect(await hit.innerText()).toContain("in the tail");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    const row = page.locator(`.tail-row[data-position='${TAIL_FACT_AT}']`);
    await expect.poll(() => row.locator(".tail-head").getAttribute("aria-expanded")).toBe("true");
    await expect.poll(() => row.locator(".preview").innerText()).toBe(TAIL_FACT);
    await page.close();
  });

  it("updates live when a new message is published, and shows the actor", async () => {
    const page = await openPage();
    await page.goto(`${builder.base}/ui/threads/${B}`);
    const messages = page.locator(".stat", { hasText: "messages" }).locator(".value");
    await expect.poll(() => messages.innerText()).toBe("6");
    await expect.poll(() => page.locator(".live").innerText()).toBe("● live");
    await publishMessage(h, { ...chatMessage(B, 6), text: "a message the page did not have" });
    await expect.poll(() => messages.innerText(), { timeout: 15_000 }).toBe("7");
    await expect
      .poll(() => page.locator(".tail-row .preview").last().innerText())
      .toBe("a message the page did not have");
    // The worker holds B's actor (it just took a message): its state, from the actor feed.
    await expect
      .poll(() => page.locator(".panel.actor header .badge").innerText(), { timeout: 10_000 })
      .not.toMatch(/not in memory|…/);
    expect(await page.locator(".transitions tr").count()).toBeGreaterThan(0);
    await page.close();
  });

  it("fits 1280 px without sideways scrolling, light or dark as the OS says", async () => {
    const looks: Record<string, { background: number; text: number }> = {};
    for (const scheme of ["light", "dark"] as const) {
      const page = await openPage(scheme);
      for (const path of ["/ui/", `/ui/threads/${A}`]) {
        await page.goto(`${builder.base}${path}`);
        await page.locator("table.threads tbody tr, [role=treeitem]").first().waitFor();
        // Page code as text: the tests are type-checked without the DOM's types.
        const sideways = await page.evaluate<number>(
          "document.documentElement.scrollWidth - document.documentElement.clientWidth",
        );
        expect(sideways, `${path} in ${scheme} scrolls sideways`).toBe(0);
      }
      // The thread page shows its panels side by side, none cut off at the right.
      const outline = await page.locator(".panel.outline").boundingBox();
      const side = await page.locator(".side").boundingBox();
      expect(outline && side && outline.x + outline.width <= side.x).toBe(true);
      expect(side && side.x + side.width <= 1280).toBe(true);
      // Relative luminance (0 black, 1 white) of the page's background and its text.
      const luminance = (css: string) => {
        const [r = 0, g = 0, b = 0] = (css.match(/[\d.]+/g) ?? []).map(Number);
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
      };
      const colors = await page.evaluate<{ background: string; text: string }>(
        "(({ backgroundColor, color }) => ({ background: backgroundColor, text: color }))(getComputedStyle(document.body))",
      );
      looks[scheme] = { background: luminance(colors.background), text: luminance(colors.text) };
      await page.close();
    }
    expect(looks.light?.background).toBeGreaterThan(0.8);
    expect(looks.light?.text).toBeLessThan(0.3);
    expect(looks.dark?.background).toBeLessThan(0.2);
    expect(looks.dark?.text).toBeGreaterThan(0.7);
  });

  it("logged no console error on any page", () => {
    expect(errors).toEqual([]);
  });
});

describe("the explorer behind a token", () => {
  let guarded: BuilderProcess;
  const token = "explorer-e2e-token-0123456789";

  beforeAll(async () => {
    guarded = await BuilderProcess.start(inject("natsUrl"), names, SMALL, {
      OUTLINE_API_TOKEN: token,
    });
  });

  afterAll(async () => {
    guarded.child.kill("SIGTERM");
    await guarded.exited;
  });

  it("asks for the token once, then reads with its session cookie", async () => {
    expect((await guarded.get("/ui/api/threads")).status).toBe(401);
    const page = await browser.newPage();
    await page.goto(`${guarded.base}/ui/`);
    const field = page.getByLabel("API token");
    await field.fill("not-the-token-at-all");
    await page.getByRole("button", { name: "Open" }).click();
    await page.getByText("That token is not accepted.").waitFor();
    await field.fill(token);
    await page.getByRole("button", { name: "Open" }).click();
    await expect
      .poll(() => page.locator("table.threads tbody td.thread-id").allInnerTexts())
      .toEqual(expect.arrayContaining([A, B, C]));
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "outline_ui");
    expect(session?.httpOnly).toBe(true);
    expect(session?.value).not.toContain(token);
    // The cookie opens /ui/api/ only, not the API itself.
    const api = await page.evaluate(async () => (await fetch("/threads/explore-a/outline")).status);
    expect(api).toBe(401);
    await page.close();
  });
});
