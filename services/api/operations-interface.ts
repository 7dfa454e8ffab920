// The API's operations as their callers see them: the prompt-builder implements them
// (prompt-builder/operations.ts); its HTTP and NATS transports and the explorer call them.
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { PromptReply, ZoomReply } from "../../shared/api.ts";
import type { RawRequest } from "./requests.ts";
import type { ToolDefinition } from "./tools.ts";

/** The prompt-builder's operations, free of any transport: HTTP and NATS both call these. */
export interface Operations {
  prompt(raw: RawRequest): Promise<PromptReply>;
  /**
   * The same reply as the transports send it, JSON in UTF-8, byte for byte
   * `JSON.stringify(await prompt(raw))`; kept and served again while nothing it depends on
   * changed (see PromptCache).
   */
  promptBody(raw: RawRequest): Promise<Buffer>;
  /** The same body in chunks, to be sent one after another (HTTP: no copy into one buffer). */
  promptChunks(raw: RawRequest): Promise<readonly Buffer[]>;
  zoom(raw: RawRequest): Promise<ZoomReply>;
  outline(raw: RawRequest): Promise<OutlineSnapshot>;
  /** The tools agents are offered: zoom, and search when HISTORY_SEARCH is on. */
  tools(raw: RawRequest): Promise<ToolDefinition[]>;
}
