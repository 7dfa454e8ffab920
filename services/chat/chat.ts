import { randomUUID } from "node:crypto";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Message } from "../../shared/events.ts";
import type { OpenAIMessage } from "../../shared/prompt.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { InfraNames } from "../config/names.ts";
import { subjects } from "../nats/subjects.ts";
import type { PromptBuilderClient } from "../cli/ask.ts";
import { ApiError } from "../api/api-error.ts";
import type { PromptReply } from "../prompt-builder/operations.ts";
import type { Agent } from "./agent.ts";
import { formatOutline, formatPrompt, formatStats, formatZoom } from "./views.ts";
import { sleep } from "../util/wait.ts";

export interface ChatOptions {
  js: JetStreamClient;
  names: InfraNames;
  /** The running prompt-builder: the prompt, outline, zoom and tools an agent of it gets. */
  operations: PromptBuilderClient;
  agent: Agent;
  thread: string;
  /** Who types. */
  user: string;
  /** Who answers: its messages are `assistant` in its prompt. */
  agentName: string;
  print: (line: string) => void;
  /** How long a message may take to reach the prompt. */
  waitMs?: number;
}

export const CHAT_HELP = [
  "commands: /prompt  the prompt as the model sees it (first 160 characters of each message), its tools",
  "          /outline the outline lines with levels and sizes, and how far its snapshot trails",
  "          /zoom id n  open line id+n (n=1: message id whole)",
  "          /stats   tail tokens, outline bytes, calls; cuts and merges since this chat started",
  "          /help    this list; Ctrl-D or /quit leaves",
].join("\n");

/** One terminal chat: each line typed is a message; the agent answers from its prompt. */
export function createChat(o: ChatOptions) {
  const s = subjects(o.names);
  let cuts = 0;
  let lastBoundary: number | undefined;
  // The thread when this chat first looked: /stats counts cuts and merges from there.
  let startMerges: number | undefined;

  async function publish(message: Message): Promise<void> {
    await o.js.publish(s.messageCreated(o.thread), JSON.stringify(message), { msgID: message.id });
  }

  const prompt = (): Promise<PromptReply> =>
    o.operations.prompt({ thread: o.thread, agent: o.agentName });

  // The prompt-builder reads messages stored after the snapshot straight from CHAT, so ours is
  // there as soon as it is stored; waiting for it proves the agent answers what it was sent.
  async function promptWith(content: string): Promise<OpenAIMessage[]> {
    const deadline = Date.now() + (o.waitMs ?? 10_000);
    for (;;) {
      const reply = await prompt();
      const messages = reply.messages as OpenAIMessage[];
      if (messages.at(-1)?.content === content) return messages;
      if (Date.now() > deadline) {
        throw new Error(
          `your message did not reach the prompt of '${o.thread}' within ${(o.waitMs ?? 10_000) / 1000}s; check that NATS is up and the CHAT stream captures ${s.messageCreated(o.thread)}`,
        );
      }
      await sleep(50);
    }
  }

  /** Counts a cut when the boundary moved since the last look. */
  function track(snap: OutlineSnapshot): OutlineSnapshot {
    startMerges ??= snap.boundary - snap.lines.length;
    if (lastBoundary !== undefined && snap.boundary > lastBoundary) cuts += 1;
    lastBoundary = snap.boundary;
    return snap;
  }

  /** The snapshot, cuts counted; undefined while the thread has none (nothing cut or merged). */
  async function observeCuts(): Promise<OutlineSnapshot | undefined> {
    try {
      return track(await o.operations.outline({ thread: o.thread }));
    } catch (err) {
      if (!(err instanceof ApiError && err.code === "THREAD_NOT_FOUND")) throw err;
      // A new thread: everything it will have is this chat's.
      startMerges ??= 0;
      lastBoundary ??= 0;
      return undefined;
    }
  }

  /**
   * The snapshot and how many messages are newer than it: the prompt's count of them, read for
   * the same snapshot (undefined when a newer snapshot kept coming between the two reads).
   */
  async function outlineWithLag(): Promise<{
    snap: OutlineSnapshot;
    newer?: number | "unwritten";
  }> {
    let snap: OutlineSnapshot | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const [outline, reply] = await Promise.all([
        o.operations.outline({ thread: o.thread }),
        prompt().catch(() => undefined),
      ]);
      snap = track(outline);
      if (reply?.stats.snapshotSeq === snap.seq) {
        return { snap, newer: reply.stats.newerThanSnapshot };
      }
      // No snapshot stored: the prompt-builder's outline then counts the stored messages.
      if (reply?.stats.snapshotSeq === 0 && snap.boundary === 0)
        return { snap, newer: "unwritten" };
    }
    return { snap: snap as OutlineSnapshot };
  }

  async function say(text: string): Promise<void> {
    const mine: Message = {
      id: `chat-${randomUUID()}`,
      thread: o.thread,
      at: new Date().toISOString(),
      from: o.user,
      to: o.agentName,
      role: "user",
      text,
    };
    await publish(mine);
    const messages = await promptWith(`${o.user}: ${text}`);
    const answer = await o.agent.answer(o.thread, messages);
    await publish({
      id: `chat-${randomUUID()}`,
      thread: o.thread,
      at: new Date().toISOString(),
      from: o.agentName,
      to: o.user,
      role: "assistant",
      text: answer,
    });
    o.print(`${o.agentName}: ${answer}`);
    await observeCuts().catch(() => undefined);
  }

  async function command(line: string): Promise<boolean> {
    const [name, ...rest] = line.trim().split(/\s+/);
    switch (name) {
      case "/prompt": {
        const [reply, tools] = await Promise.all([
          prompt(),
          o.operations.tools({ thread: o.thread }),
        ]);
        for (const l of formatPrompt(reply, tools)) o.print(l);
        return true;
      }
      case "/outline": {
        const { snap, newer } = await outlineWithLag();
        for (const l of formatOutline(snap, newer)) o.print(l);
        return true;
      }
      case "/zoom": {
        const [id, n] = rest;
        if (id === undefined || n === undefined) {
          o.print("usage: /zoom id n   e.g. /zoom 0 4 opens line 0+4, /zoom 3 1 reads message 3");
          return true;
        }
        for (const l of formatZoom(await o.operations.zoom({ thread: o.thread, id, n })))
          o.print(l);
        return true;
      }
      case "/stats": {
        const [reply, snap] = await Promise.all([prompt(), observeCuts()]);
        const calls = o.agent.calls();
        const merges = snap ? snap.boundary - snap.lines.length : 0;
        const lines = formatStats({
          tailTokens: reply.stats.tailTokens,
          outlineBytes: reply.stats.outlineBytes,
          cuts,
          merges: merges - (startMerges ?? merges),
          thread: { cut: snap?.boundary ?? 0, merges },
          modelCalls: calls.model,
          zoomCalls: calls.zoom,
        });
        for (const l of lines) o.print(l);
        return true;
      }
      case "/help":
        o.print(CHAT_HELP);
        return true;
      case "/quit":
        return false;
      default:
        o.print(`unknown command '${name}'; /help lists them (a message cannot start with '/')`);
        return true;
    }
  }

  /** Handles one typed line; false when the user asked to leave. */
  async function handle(line: string): Promise<boolean> {
    const text = line.trim();
    if (text === "") return true;
    try {
      if (text.startsWith("/")) return await command(text);
      await say(text);
    } catch (err) {
      o.print(`error: ${(err as Error).message}`);
    }
    return true;
  }

  return { handle, observeCuts };
}
