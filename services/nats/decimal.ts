/**
 * The whole number written in decimal digits only from `start` to `end` of `s`, else undefined.
 * For the subjects read once per message (a reply's sequences, a node's level and index), where
 * a split or a regular expression per message shows in a profile.
 */
export function decimalIn(s: string, start: number, end: number): number | undefined {
  if (end <= start) return undefined;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return undefined;
    n = n * 10 + d;
  }
  return n;
}
