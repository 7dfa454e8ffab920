/**
 * Whether two byte strings are equal (two missing ones too): a stored value against the one about
 * to be written, a snapshot against the one a kept body was built from. `Buffer.compare` is a
 * memcmp: a snapshot is ~150 KB and this runs per prompt request.
 */
export function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  return Buffer.compare(a, b) === 0;
}
