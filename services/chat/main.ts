import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { jetstream } from "@nats-io/jetstream";
import { THREAD_ID } from "../../shared/events.ts";
import { loadSettings } from "../config/load.ts";
import { connectNats, redactUrl } from "../nats/connect.ts";
import { ensureTopology } from "../nats/topology.ts";
import { promptBuilderClient, requirePromptBuilder } from "../cli/ask.ts";
import { echoAgent, openAIAgent } from "./agent.ts";
import { CHAT_HELP, createChat } from "./chat.ts";
import { natsUrlSource } from "../config/nats-url.ts";

const USAGE = `usage: npm run chat -- [--thread T] [--as NAME] [--agent NAME] [--model MODEL]

You type, an agent answers, in one thread (default: a new one). With OPENAI_API_KEY set the agent
is a real model (--model, else OPENAI_CHAT_MODEL, else gpt-4o-mini; OPENAI_BASE_URL for another
endpoint) given the prompt and the tools; without it the agent echoes what it was sent.
Run npm start first: the thread worker makes the outline, and the prompt, zoom and tools come
from the running prompt-builder (asked on <OUTLINE_API_PREFIX>.prompt|zoom|outline|tools), built
with its settings (HISTORY_SEARCH, the tail's cap), as an agent gets them.

${CHAT_HELP}`;

async function main(): Promise<number> {
  let values;
  try {
    values = parseArgs({
      options: {
        thread: { type: "string" },
        as: { type: "string" },
        agent: { type: "string" },
        model: { type: "string" },
        config: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }).values;
  } catch (err) {
    process.stderr.write(`chat: ${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const thread = values.thread ?? `chat-${randomUUID().slice(0, 8)}`;
  if (!THREAD_ID.test(thread)) {
    process.stderr.write(
      `chat: --thread '${thread}' is not 1–128 characters of A-Z, a-z, 0-9, '_' or '-'\n`,
    );
    return 2;
  }
  const config = loadSettings();
  const { url, from } = natsUrlSource(config);
  const nc = await connectNats({
    url,
    from,
    name: "outline-chat",
    auth: config.auth,
    startupTimeoutMs: 3_000,
  });
  // The chat publishes like the platform does: the streams must exist (the worker makes them too).
  await ensureTopology(nc, config.names, { replicas: config.replicas });
  const js = jetstream(nc);
  // What an agent gets is what the running prompt-builder builds, with its settings, not ours.
  const operations = promptBuilderClient(nc, config.names.apiPrefix);
  await requirePromptBuilder(operations, thread);
  const apiKey = config.values["OPENAI_API_KEY"]?.trim();
  const model = values.model ?? config.values["OPENAI_CHAT_MODEL"]?.trim() ?? "gpt-4o-mini";
  const agent = apiKey
    ? openAIAgent({
        apiKey,
        baseURL: config.values["OPENAI_BASE_URL"]?.trim() || undefined,
        model,
        operations,
      })
    : echoAgent();
  const user = values.as ?? "Ana";
  const agentName = values.agent ?? "agent";
  const print = (line: string) => process.stdout.write(`${line}\n`);
  const chat = createChat({
    js,
    names: config.names,
    operations,
    agent,
    thread,
    user,
    agentName,
    print,
  });

  // Where the thread stands now: /stats counts this chat's cuts and merges from here.
  await chat.observeCuts().catch(() => undefined);
  print(
    `chat in thread ${thread} as ${user}; ${agentName} is ${agent.name} (NATS ${redactUrl(url)}). /help lists commands.`,
  );
  const tty = process.stdin.isTTY === true;
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: tty });
  rl.setPrompt(`${user}> `);
  if (tty) rl.prompt();
  // Lines are handled one at a time, in order, even when typed (or piped) faster than answered.
  for await (const line of rl) {
    if (!(await chat.handle(line))) break;
    if (tty) rl.prompt();
  }
  rl.close();
  await nc.drain();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`chat: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
