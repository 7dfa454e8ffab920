/**
 * "A message id is applied once" for the thread's whole life, not only while the id is in the
 * tail. The worker keeps the index in KV (services/nats/id-index.ts), the replay in
 * memory (`claimId`); both answer as below, and the step refuses a message whose claim names an
 * earlier sequence (`firstSeq` on `message.created`).
 */
export type IdClaim = { type: "new" } | { type: "duplicate"; firstSeq: number };

export const NEW_ID: IdClaim = { type: "new" };

/**
 * Records that `id` is first carried by `seq`, or says which sequence carried it first. Claiming
 * again with the same sequence (a redelivery after a crash between claim and save) is new.
 */
export function claimId(index: Map<string, number>, id: string, seq: number): IdClaim {
  const first = index.get(id);
  if (first === undefined) {
    index.set(id, seq);
    return NEW_ID;
  }
  return first === seq ? NEW_ID : { type: "duplicate", firstSeq: first };
}
