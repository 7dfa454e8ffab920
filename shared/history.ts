import { z } from "zod";
import { threadIdSchema } from "./events.ts";

/**
 * One built summary node, as published on `history.<thread>.<level>.<index>` with msgID
 * `thread:level:index` (SPEC §8): a replay reads these instead of calling a model. A leaf also
 * names its source message and where it is stored, so zoom(id, 1) reads it in two lookups.
 */
export const summaryEventSchema = z.object({
  thread: threadIdSchema,
  level: z.number().int().min(0),
  index: z.number().int().min(0),
  text: z.string().min(1),
  until: z.string(),
  /** Free (built without a model call) or by which summarizer. */
  by: z.string(),
  /** Leaves only: the source message's id and CHAT stream sequence. */
  message: z.object({ id: z.string(), seq: z.number().int().min(0) }).optional(),
});
export type SummaryEvent = z.infer<typeof summaryEventSchema>;

/**
 * The settings a thread runs under from CHAT sequence `from` on (README, Settings), on HISTORY
 * at `history.<thread>.settings.<from>`: written by the worker before the first event it applies
 * under them, read by a replay to apply them at the same event.
 */
export const settingsEventSchema = z.object({
  thread: threadIdSchema,
  from: z.number().int().min(0),
  line: z.number().int().min(1),
  tail: z.tuple([z.number().int().min(0), z.number().int().min(0)]),
  outline: z.tuple([z.number().int().min(0), z.number().int().min(0)]),
});
export type SettingsEvent = z.infer<typeof settingsEventSchema>;
