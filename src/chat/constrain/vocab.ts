// Owns the per-tokenizer vocabulary index the masks are computed against; built once per tokenizer
// (`VocabIndex.cached`) and shared by every request and grammar.
//  - `full`: a trie of every token's bytes, walked with the recognizer state to find the allowed tokens
//    (a subtree is skipped as soon as its prefix is rejected);
//  - `plain[u]`: bitmasks of the tokens made only of bytes a string body takes as they are (no quote,
//    backslash or control byte) that are valid UTF-8 continuing from UTF-8 state u. Inside a string these
//    are allowed whatever the stack below, which is most of the vocabulary, so a string state's mask is
//    plain[u] OR a walk of
//  - `special`: the trie of the remaining tokens (those with a quote, backslash or control byte);
//  - `tails`: the same tokens cut at their first quote/backslash/control byte, for tokens whose part before
//    it is valid UTF-8 ending on a character boundary. At a character boundary inside a string that part
//    leaves the state as it is, so walking the tails (`word"` and `other"` share one path) is exact and
//    visits a few hundred nodes instead of tens of thousands.
// Token ids with no bytes (special/control tokens: pass null) are never allowed; EOS ids are allowed
// exactly when the document is complete.
import { isStringSpecial, UTF8, UTF8_STATES } from "./recognizer.ts";

/** A token trie, flattened: node 0 is the root; children are edge ranges sorted by byte. */
export class TokenTrie {
  constructor(
    /** Per node: first edge index and edge count. */
    readonly edgeStart: Int32Array,
    readonly edgeCount: Int32Array,
    /** Per edge: the byte and the child node. */
    readonly edgeByte: Uint8Array,
    readonly edgeChild: Int32Array,
    /** Per node: the range of `tokIds` holding the tokens whose bytes end exactly here. */
    readonly tokStart: Int32Array,
    readonly tokCount: Int32Array,
    readonly tokIds: Int32Array,
  ) {}

  get nodes(): number {
    return this.edgeStart.length;
  }

  /** Builds the trie of the given token ids (bytes non-empty). */
  static build(ids: number[], bytes: readonly (Uint8Array | null)[]): TokenTrie {
    const sorted = ids.slice().sort((x, y) => compareBytes(bytes[x]!, bytes[y]!));
    // Pass 1: create nodes in preorder from the sorted list (longest common prefix with the previous token).
    const parent: number[] = [-1], byte: number[] = [0], depthStack: number[] = [0];
    const tokNode = new Int32Array(sorted.length);
    let prev: Uint8Array = new Uint8Array(0);
    for (let k = 0; k < sorted.length; k++) {
      const t = bytes[sorted[k]]!;
      let l = 0;
      while (l < t.length && l < prev.length && t[l] === prev[l]) l++;
      depthStack.length = l + 1;
      for (let i = l; i < t.length; i++) {
        const node = parent.length;
        parent.push(depthStack[i]);
        byte.push(t[i]);
        depthStack.push(node);
      }
      tokNode[k] = depthStack[t.length];
      prev = t;
    }
    const n = parent.length;
    const edgeStart = new Int32Array(n), edgeCount = new Int32Array(n);
    for (let i = 1; i < n; i++) edgeCount[parent[i]]++;
    for (let i = 1, acc = 0; i < n; i++) acc += edgeCount[i - 1], edgeStart[i] = acc;
    const edgeByte = new Uint8Array(Math.max(0, n - 1)), edgeChild = new Int32Array(Math.max(0, n - 1));
    const fill = new Int32Array(n);
    // Preorder over a sorted list adds each node's children in byte order.
    for (let i = 1; i < n; i++) {
      const p = parent[i], e = edgeStart[p] + fill[p]++;
      edgeByte[e] = byte[i];
      edgeChild[e] = i;
    }
    const tokStart = new Int32Array(n), tokCount = new Int32Array(n), tokIds = new Int32Array(sorted.length);
    for (let k = 0; k < sorted.length; k++) tokCount[tokNode[k]]++;
    for (let i = 1, acc = 0; i < n; i++) acc += tokCount[i - 1], tokStart[i] = acc;
    const tfill = new Int32Array(n);
    for (let k = 0; k < sorted.length; k++) {
      const node = tokNode[k];
      tokIds[tokStart[node] + tfill[node]++] = sorted[k];
    }
    return new TokenTrie(edgeStart, edgeCount, edgeByte, edgeChild, tokStart, tokCount, tokIds);
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

export interface VocabStats {
  tokens: number;
  usable: number;
  fullNodes: number;
  specialTokens: number;
  specialNodes: number;
  tailNodes: number;
  buildMs: number;
}

const byKey = new WeakMap<object, VocabIndex>();

export class VocabIndex {
  /** Mask length in 32-bit words. */
  readonly words: number;
  readonly full: TokenTrie;
  readonly special: TokenTrie;
  readonly tails: TokenTrie;
  readonly plain: Uint32Array[];
  readonly eos: readonly number[];
  readonly stats: VocabStats;

  private constructor(
    /** Bytes of each token id; null for ids that are never allowed. */
    readonly tokens: readonly (Uint8Array | null)[],
    eos: readonly number[],
  ) {
    const t0 = performance.now();
    const size = tokens.length;
    this.words = (size + 31) >>> 5;
    this.eos = eos.filter((id) => Number.isInteger(id) && id >= 0 && id < size);
    const eosSet = new Set(this.eos);
    const all: number[] = [], special: number[] = [], tailIds: number[] = [];
    const tails: (Uint8Array | null)[] = new Array(size).fill(null);
    this.plain = Array.from({ length: UTF8_STATES }, () => new Uint32Array(this.words));
    for (let id = 0; id < size; id++) {
      const t = tokens[id];
      if (!t || t.length === 0 || eosSet.has(id)) continue;
      all.push(id);
      const k = t.findIndex(isStringSpecial);
      if (k >= 0) {
        special.push(id);
        let u = 0;
        for (let i = 0; i < k && u >= 0; i++) u = UTF8[u * 256 + t[i]];
        if (u === 0) {
          tails[id] = t.subarray(k);
          tailIds.push(id);
        }
        continue;
      }
      for (let u = 0; u < UTF8_STATES; u++) {
        let s = u;
        for (let i = 0; i < t.length && s >= 0; i++) s = UTF8[s * 256 + t[i]];
        if (s >= 0) this.plain[u][id >>> 5] |= 1 << (id & 31);
      }
    }
    this.full = TokenTrie.build(all, tokens);
    this.special = TokenTrie.build(special, tokens);
    this.tails = TokenTrie.build(tailIds, tails);
    this.stats = {
      tokens: size,
      usable: all.length,
      fullNodes: this.full.nodes,
      specialTokens: special.length,
      specialNodes: this.special.nodes,
      tailNodes: this.tails.nodes,
      buildMs: performance.now() - t0,
    };
  }

  get size(): number {
    return this.tokens.length;
  }

  /** Builds an index: `tokens[id]` is that token's decoded bytes (null: never allowed). */
  static build(tokens: readonly (Uint8Array | null)[], eos: readonly number[]): VocabIndex {
    return new VocabIndex(tokens, eos);
  }

  /** The index for `key` (e.g. the tokenizer object), built on first use with `make` and kept while key lives. */
  static cached(
    key: object,
    make: () => { tokens: readonly (Uint8Array | null)[]; eos: readonly number[] },
  ): VocabIndex {
    let ix = byKey.get(key);
    if (!ix) {
      const { tokens, eos } = make();
      ix = new VocabIndex(tokens, eos);
      byKey.set(key, ix);
    }
    return ix;
  }
}
