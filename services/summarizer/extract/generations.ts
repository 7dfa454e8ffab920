// A memo of bounded size for values that are pure functions of their keys: two generations, the
// younger fills up to `entries`, then becomes the older (the oldest dropped). What it holds only
// makes a result sooner, never different.

export class Generations<V> {
  #young = new Map<string, V>();
  #old = new Map<string, V>();

  constructor(readonly entries: number) {}

  /** The value held for `key`; one found in the older generation is held again as young. */
  get(key: string): V | undefined {
    const young = this.#young.get(key);
    if (young !== undefined) return young;
    const old = this.#old.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  set(key: string, value: V): void {
    if (this.#young.size >= this.entries) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(key, value);
  }

  clear(): void {
    this.#young = new Map();
    this.#old = new Map();
  }
}
