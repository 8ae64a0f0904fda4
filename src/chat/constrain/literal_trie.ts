// Owns the small byte tries the grammar matches literals with: enum/const values, true/false/null, object
// keys, and the markup around tool calls. Each terminal carries a value (the literal's index, or a property
// index for key tries). Tries are tiny (a few hundred nodes), so children live in per-node Maps.

export class LiteralTrie {
  readonly #children: Map<number, number>[] = [new Map()];
  readonly #value: number[] = [-1];
  /** Per node: the bytes of the shortest path to a terminal (lazily). */
  readonly #shortest: (number[] | null | undefined)[] = [];
  size = 0;

  static readonly ROOT = 0;

  /** Adds a literal; the first value given for equal bytes wins. */
  add(bytes: Uint8Array, value: number): void {
    let n = 0;
    for (const b of bytes) {
      let c = this.#children[n].get(b);
      if (c === undefined) {
        c = this.#children.length;
        this.#children.push(new Map());
        this.#value.push(-1);
        this.#children[n].set(b, c);
      }
      n = c;
    }
    if (this.#value[n] < 0) {
      this.#value[n] = value;
      this.size++;
    }
  }

  /** The child of `node` along byte `b`, or -1. */
  child(node: number, b: number): number {
    return this.#children[node].get(b) ?? -1;
  }

  /** The value of the literal ending at `node`, or -1 when none ends there. */
  value(node: number): number {
    return this.#value[node];
  }

  hasChildren(node: number): boolean {
    return this.#children[node].size > 0;
  }

  get empty(): boolean {
    return this.size === 0;
  }

  /** The shortest byte path from `node` to a terminal (empty when `node` is one); null when none. */
  shortestFrom(node: number): number[] | null {
    const memo = this.#shortest[node];
    if (memo !== undefined) return memo;
    let best: number[] | null = this.#value[node] >= 0 ? [] : null;
    if (best === null) {
      // Breadth-first: literals are short, so this stays small.
      const queue: [number, number[]][] = [[node, []]];
      for (let q = 0; q < queue.length && best === null; q++) {
        const [n, path] = queue[q];
        for (const [b, c] of this.#children[n]) {
          const p = [...path, b];
          if (this.#value[c] >= 0) {
            best = p;
            break;
          }
          queue.push([c, p]);
        }
      }
    }
    this.#shortest[node] = best;
    return best;
  }

  /** Every literal as [bytes, value] (tests and error messages). */
  *entries(): Generator<[number[], number]> {
    const walk = function* (t: LiteralTrie, n: number, path: number[]): Generator<[number[], number]> {
      if (t.#value[n] >= 0) yield [path, t.#value[n]];
      for (const [b, c] of t.#children[n]) yield* walk(t, c, [...path, b]);
    };
    yield* walk(this, 0, []);
  }
}
