// In-memory stand-ins for the JetStream calls the worker's small KV helpers make: one stream of
// subjects with sequences, a KvWrites over it (create-if-absent answers JetStream's own "wrong
// last sequence" error) and the part of a JetStreamManager that erasing a subject uses. Enough
// for unit tests of what is written where, not a model of the server.
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import type { KvEntry } from "@nats-io/kv";
import type { KvWrites } from "../../services/nats/kv-writer.ts";

/** Runs `f` as an I/O call would: later, a throw as a rejection. */
const later = <T>(f: () => T): Promise<T> => Promise.resolve().then(f);

interface Stored {
  subject: string;
  value: Uint8Array;
  operation: "PUT" | "DEL";
}

/** Whether NATS subject `subject` matches `filter` (tokens, `*` for one, `>` for the rest). */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

export class FakeStream {
  readonly messages = new Map<number, Stored>();
  #seq = 0;
  /** Every write, in order: the subjects the code under test wrote to. */
  readonly written: string[] = [];

  constructor(readonly name: string) {}

  append(subject: string, value: Uint8Array, operation: Stored["operation"] = "PUT"): number {
    this.messages.set(++this.#seq, { subject, value, operation });
    this.written.push(subject);
    return this.#seq;
  }

  lastBySubject(subject: string): { seq: number; stored: Stored } | undefined {
    let found: { seq: number; stored: Stored } | undefined;
    for (const [seq, stored] of this.messages)
      if (stored.subject === subject) found = { seq, stored };
    return found;
  }

  subjects(): string[] {
    return [...this.messages.values()].map((m) => m.subject);
  }

  /** A KvWrites on bucket `bucket`, whose KV stream this is. */
  kv(bucket: string): KvWrites {
    const subjectOf = (key: string) => `$KV.${bucket}.${key}`;
    const wrongLast = () =>
      new JetStreamApiError({
        code: 400,
        err_code: JetStreamApiCodes.StreamWrongLastSequence,
        description: "wrong last sequence",
      });
    return {
      create: (key, value) =>
        later(() => {
          const last = this.lastBySubject(subjectOf(key));
          if (last && last.stored.operation === "PUT") throw wrongLast();
          return this.append(subjectOf(key), value);
        }),
      update: (key, value, revision) =>
        later(() => {
          if (this.lastBySubject(subjectOf(key))?.seq !== revision) throw wrongLast();
          return this.append(subjectOf(key), value);
        }),
      put: (key, value) => later(() => this.append(subjectOf(key), value)),
      get: (key) =>
        later(() => {
          const last = this.lastBySubject(subjectOf(key));
          if (!last) return null;
          return {
            bucket,
            key,
            value: last.stored.value,
            revision: last.seq,
            operation: last.stored.operation,
          } as unknown as KvEntry;
        }),
    };
  }

  /** The part of a JetStreamManager `eraseSubject` calls, on this stream only. */
  manager(): JetStreamManager {
    const mine = (stream: string) => {
      if (stream !== this.name) throw new Error(`stream ${stream} not found (fake: ${this.name})`);
    };
    const fake = {
      streams: {
        purge: (stream: string, opts: { filter: string; seq?: number }) =>
          later(() => {
            mine(stream);
            let purged = 0;
            for (const [seq, m] of this.messages) {
              if (opts.seq !== undefined && seq >= opts.seq) continue;
              if (!subjectMatches(opts.filter, m.subject)) continue;
              this.messages.delete(seq);
              purged += 1;
            }
            return { success: true, purged };
          }),
        deleteMessage: (stream: string, seq: number) =>
          later(() => {
            mine(stream);
            return this.messages.delete(seq);
          }),
      },
      direct: {
        getMessage: (stream: string, q: { next_by_subj: string; seq: number }) =>
          later(() => {
            mine(stream);
            const seqs = [...this.messages.keys()].sort((a, b) => a - b);
            for (const seq of seqs) {
              const m = this.messages.get(seq);
              if (seq >= q.seq && m && subjectMatches(q.next_by_subj, m.subject)) {
                return { seq, subject: m.subject, data: m.value };
              }
            }
            return null;
          }),
      },
    };
    return fake as unknown as JetStreamManager;
  }
}
