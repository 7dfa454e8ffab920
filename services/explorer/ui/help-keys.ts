// The keys the `?` dialog lists (docs/explorer.md, "Keyboard", lists the same; a test holds them
// together): [keys, what they do]. Kept apart from main.tsx so a test can read them.
export const HELP_KEYS: readonly (readonly [string, string])[] = [
  ["/", "filter the list, or search the thread"],
  ["↓ ↑  Enter", "from the search field through its hits; open one"],
  ["j k  ↓ ↑", "move through threads or outline lines"],
  ["Enter", "open a thread; zoom into a line"],
  ["→ ←  l h", "zoom in, back out (outline)"],
  ["n p", "older and newer page of threads"],
  ["g", "the newest page of threads"],
  ["t", "focus the outline"],
  ["u  Esc", "back to the list"],
  ["r", "reload the list"],
  ["?", "this help"],
];
