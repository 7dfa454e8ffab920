/**
 * A binary heap ordered by `before` (a strict order: `before(a, b)` when a comes out first).
 * The outline's merge batch keeps its sibling pairs in one (shared/batch.ts), the extractive
 * summarizer its units not yet weighed (services/summarizer/extract/merge.ts).
 */
export class Heap<T> {
  readonly #items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.#items.length;
  }

  /** The first, or undefined when empty. */
  top(): T | undefined {
    return this.#items[0];
  }

  /** The item at `i` in the heap's array (0 is the first; 1 and 2 are its children). */
  at(i: number): T | undefined {
    return this.#items[i];
  }

  push(item: T): void {
    const items = this.#items;
    let i = items.push(item) - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (!this.before(item, items[up] as T)) break;
      items[i] = items[up] as T;
      i = up;
    }
    items[i] = item;
  }

  /** Takes the first out. */
  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) this.#sink(last);
    return top;
  }

  /** The first moved back (its key changed so that it comes out later): it sinks to its place. */
  sinkTop(): void {
    const first = this.#items[0];
    if (this.#items.length > 1 && first !== undefined) this.#sink(first);
  }

  /** Puts `item` at the top and lets it sink. */
  #sink(item: T): void {
    const items = this.#items;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= items.length) break;
      const r = l + 1;
      const child = r < items.length && this.before(items[r] as T, items[l] as T) ? r : l;
      if (!this.before(items[child] as T, item)) break;
      items[i] = items[child] as T;
      i = child;
    }
    items[i] = item;
  }
}
