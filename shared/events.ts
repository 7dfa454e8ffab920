import { z } from "zod";

/** A thread id is a NATS subject token: 1–128 characters of [A-Za-z0-9_-]. */
export const THREAD_ID = /^[A-Za-z0-9_-]{1,128}$/;

export const threadIdSchema = z
  .string()
  .regex(
    THREAD_ID,
    "a thread id is 1–128 characters of A-Z, a-z, 0-9, '_' or '-' (it is a subject token)",
  );

// ISO-8601 date-time with an explicit offset or Z; kept as the string the platform sent so that
// comparisons and prompts stay byte-identical on replay.
const isoTime = z.iso.datetime({
  offset: true,
  message: "must be an ISO-8601 date-time with its offset (Z or ±hh:mm), e.g. 2026-11-30T08:15:00Z",
});

export const roleSchema = z.enum(["user", "assistant", "tool", "system"]);
export type Role = z.infer<typeof roleSchema>;

export const messageCreatedSchema = z.object({
  id: z
    .string()
    .min(1, "a message id is required")
    .max(256, "a message id is at most 256 characters"),
  thread: threadIdSchema,
  at: isoTime,
  from: z.string().min(1, "'from' names the author").max(256),
  to: z.string().max(256).optional(),
  role: roleSchema,
  text: z.string(),
  state: z.unknown().optional(),
  steps: z.array(z.unknown()).optional(),
});
export type Message = z.infer<typeof messageCreatedSchema>;

export const threadDeletedSchema = z.object({
  thread: threadIdSchema,
  at: isoTime,
});
export type ThreadDeletedBody = z.infer<typeof threadDeletedSchema>;

/** Turns zod issues into one sentence a person can act on. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join(".") : "body"}: ${issue.message}`)
    .join("; ");
}
