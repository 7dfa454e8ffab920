// UTF-8 byte arithmetic without I/O: TextEncoder is part of the language runtime, not a device.
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

/** A character outside ASCII (no `g` flag: the RegExp keeps no state between tests). */
// eslint-disable-next-line no-control-regex -- the range is every ASCII character, \x00 included
export const NON_ASCII = /[^\x00-\x7f]/;

const ASCII_STRETCH = 64;
// eslint-disable-next-line no-control-regex -- the range is every ASCII character, \x00 included
const NEXT_NON_ASCII = /[^\x00-\x7f]/g;

/** UTF-8 byte length of a string, without allocating for ASCII-only text. */
export function utf8Bytes(text: string): number {
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = 0;
  let plain = 0; // ASCII characters in a row
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      bytes += 1;
      // A long ASCII stretch (a line with one `→` or `…`): a search skips to the next other
      // character, a byte per character skipped, faster than this loop steps.
      if (++plain === ASCII_STRETCH) {
        NEXT_NON_ASCII.lastIndex = i + 1;
        const next = NEXT_NON_ASCII.exec(text);
        const to = next ? next.index : text.length;
        bytes += to - (i + 1);
        i = to - 1;
        plain = 0;
      }
      continue;
    }
    plain = 0;
    if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** The longest prefix of `text` that fits in `limit` UTF-8 bytes, never splitting a character. */
export function cutToBytes(text: string, limit: number): string {
  if (limit <= 0) return "";
  if (text.length <= limit && utf8Bytes(text) <= limit) return text;
  // The first `limit` characters ASCII: they are the first `limit` bytes, and the next
  // character starts at that byte. Spares encoding a long text to keep a few hundred bytes.
  if (text.length > limit && asciiUpTo(text, limit)) return text.slice(0, limit);
  const encoded = encoder.encode(text);
  if (encoded.length <= limit) return text;
  let end = limit;
  // Step back over continuation bytes (10xxxxxx) so the cut lands on a character start.
  while (end > 0 && ((encoded[end] ?? 0) & 0xc0) === 0x80) end--;
  return decoder.decode(encoded.subarray(0, end));
}

function asciiUpTo(text: string, end: number): boolean {
  // A search for the first other character: native, where a loop here steps a character a time.
  NEXT_NON_ASCII.lastIndex = 0;
  const next = NEXT_NON_ASCII.exec(text);
  return next === null || next.index >= end;
}

/** Newlines and runs of whitespace around them fold to one space: a line is one line. */
export function foldNewlines(text: string): string {
  // Most texts have no line break: nothing to fold, and a search is much cheaper than the RegExp.
  if (text.indexOf("\n") < 0 && text.indexOf("\r") < 0) return text;
  return text.replace(/\s*[\r\n]+\s*/g, " ");
}

// Fatal: an ill-formed sequence is an error, never a U+FFFD put in its place. Measured on a
// 1 KB body it costs no more than the replacing decoder (within noise), and less than
// `isUtf8` followed by a decode.
const strict = new TextDecoder("utf-8", { fatal: true });

/**
 * `bytes` as text, or undefined when they are not well-formed UTF-8. A chat event's body is
 * decoded with this, by the worker and the replay alike: one that is not UTF-8 is refused, not
 * applied with replacement characters (SPEC §7).
 */
export function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return strict.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Where the first ill-formed UTF-8 sequence of `bytes` starts (the byte a decoder would replace
 * with U+FFFD first), or -1 when they are well-formed: for a reason's "at byte N", so read only
 * once `utf8Text` has refused the bytes.
 */
export function invalidUtf8At(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      i += 1;
      continue;
    }
    // The sequence's length and the range of its second byte (Unicode Table 3-7).
    let size: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) size = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      size = 3;
      if (b === 0xe0) low = 0xa0;
      else if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      size = 4;
      if (b === 0xf0) low = 0x90;
      else if (b === 0xf4) high = 0x8f;
    } else return i;
    if (i + size > n) return i;
    const second = bytes[i + 1] as number;
    if (second < low || second > high) return i;
    for (let k = 2; k < size; k++) {
      const next = bytes[i + k] as number;
      if (next < 0x80 || next > 0xbf) return i;
    }
    i += size;
  }
  return -1;
}

/**
 * "at byte N (0xXX)": where `bytes` stop being UTF-8 (counted from 0) and the byte found there,
 * for a refusal's reason. A byte, never text: a reason may be logged. Only for bytes `utf8Text`
 * refused.
 */
export function invalidUtf8Where(bytes: Uint8Array): string {
  const at = invalidUtf8At(bytes);
  const byte = (bytes[at] ?? 0).toString(16).toUpperCase().padStart(2, "0");
  return `at byte ${at} (0x${byte})`;
}
