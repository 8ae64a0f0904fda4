// Owns per-step token masks: a Grammar (compiled node graph, shared and cacheable) hands out Matchers (one
// per generated sequence). A mask is computed by walking the vocabulary trie with the recognizer state and
// memoized per grammar and vocabulary by the state's signature: in practice a document visits a few dozen
// distinct states (string bodies repeat, array counts saturate), so most steps are a Map lookup.
import { type Node, type NodeFactory } from "./nodes.ts";
import { chainSig, completion, feed, type Frame, initial, isComplete, K_STR, step } from "./recognizer.ts";
import { type TokenTrie, VocabIndex } from "./vocab.ts";

/** Allowed tokens: bit (id & 31) of word (id >>> 5). Shared from caches: never modify one. */
export type TokenMask = Uint32Array;

/**
 * Bytes of cached masks per grammar and vocabulary (a mask is vocab/8 bytes: 6 KiB at 49152 tokens, so
 * ~680 states; typical schemas visit under 100). With at most 16 memoized grammars this bounds the caches.
 */
const MASK_CACHE_BYTES = 4 << 20;

export interface SchemaIssue {
  keyword: string;
  path: string;
}

export class Grammar {
  readonly #masks = new WeakMap<VocabIndex, Map<string, TokenMask>>();

  constructor(
    readonly root: Node,
    /** Keywords a non-strict schema used that the grammar does not enforce (for logs). */
    readonly ignored: readonly SchemaIssue[] = [],
    /** Number of nodes (diagnostics). */
    readonly nodes = 0,
  ) {}

  static fromFactory(root: Node, f: NodeFactory, ignored: readonly SchemaIssue[] = []): Grammar {
    return new Grammar(root, ignored, f.all.length);
  }

  /** A fresh matcher at the start of the document. */
  matcher(index: VocabIndex): Matcher {
    return new Matcher(this, index, [initial(this.root)]);
  }

  /** The allowed-token mask of a state set (memoized). */
  mask(states: readonly Frame[], ix: VocabIndex): TokenMask {
    let cache = this.#masks.get(ix);
    if (!cache) this.#masks.set(ix, cache = new Map());
    const key = states.length === 1 ? chainSig(states[0]) : states.map(chainSig).sort().join("|");
    let m = cache.get(key);
    if (m) return m;
    if (states.length === 1) m = stackMask(states[0], ix);
    else {
      m = new Uint32Array(ix.words);
      for (const s of states) {
        const k = chainSig(s);
        let sm = cache.get(k);
        if (!sm) cache.set(k, sm = stackMask(s, ix));
        for (let w = 0; w < m.length; w++) m[w] |= sm[w];
      }
    }
    if (cache.size * ix.words * 4 >= MASK_CACHE_BYTES) cache.clear();
    cache.set(key, m);
    return m;
  }
}

/** Tracks one generated sequence: the recognizer state after the tokens accepted so far. */
export class Matcher {
  #states: Frame[];
  #finished = false;
  /** completion() of the current states (the constraint asks for it twice a step). */
  #completion: Uint8Array | null = null;

  constructor(readonly grammar: Grammar, readonly index: VocabIndex, states: Frame[]) {
    this.#states = states;
  }

  /** The tokens allowed next (EOS included exactly when the document is complete). Read-only. */
  mask(): TokenMask {
    if (this.#finished || this.#states.length === 0) return new Uint32Array(this.index.words);
    return this.grammar.mask(this.#states, this.index);
  }

  /** Advances by one token; false (state unchanged) when the grammar does not allow it. */
  accept(token: number): boolean {
    if (this.#finished) return false;
    if (this.index.eos.includes(token)) {
      if (!this.isComplete()) return false;
      this.#finished = true;
      return true;
    }
    const bytes = this.index.tokens[token];
    if (!bytes || bytes.length === 0) return false;
    return this.acceptBytes(bytes);
  }

  /** Advances by raw bytes (forced text); false (state unchanged) when not allowed. */
  acceptBytes(bytes: ArrayLike<number>): boolean {
    if (this.#finished) return false;
    const next = feed(this.#states, bytes);
    if (next.length === 0) return false;
    this.#states = next;
    this.#completion = null;
    return true;
  }

  /** The document is complete (EOS may come; for a trailing number, more digits may too). */
  isComplete(): boolean {
    return this.#states.some(isComplete);
  }

  /** EOS was accepted. */
  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Bytes that complete the document from here, shortest by structure (e.g. to close it at a token limit).
   * Read-only: the same array until the next accept.
   */
  completion(): Uint8Array {
    if (this.#completion) return this.#completion;
    let best: number[] | null = null;
    for (const s of this.#states) {
      const c = completion(s);
      if (best === null || c.length < best.length) best = c;
    }
    return this.#completion = new Uint8Array(best ?? []);
  }

  /** An independent copy at the same position. */
  clone(): Matcher {
    const m = new Matcher(this.grammar, this.index, this.#states);
    m.#finished = this.#finished;
    m.#completion = this.#completion;
    return m;
  }
}

/** The mask of one stack. */
function stackMask(top: Frame, ix: VocabIndex): TokenMask {
  const mask = new Uint32Array(ix.words);
  if (top.kind === K_STR && top.ph === 1 && top.b === 0) {
    // Inside a string body: plain tokens stay in it whatever the stack below; only the rest needs a walk,
    // and at a character boundary only from their first quote/backslash/control byte on.
    mask.set(ix.plain[top.a]);
    if (top.a === 0) walk(ix.tails, 0, [top], mask, 0);
    else walk(ix.special, 0, [top], mask, 0);
  } else walk(ix.full, 0, [top], mask, 0);
  if (isComplete(top)) { for (const id of ix.eos) mask[id >>> 5] |= 1 << (id & 31); }
  return mask;
}

/** Per-depth scratch arrays for the walk (the walk is synchronous, so one set serves every call). */
const scratch: Frame[][] = [];

function walk(t: TokenTrie, node: number, states: Frame[], mask: TokenMask, depth: number): void {
  const next = scratch[depth] ??= [];
  const eEnd = t.edgeStart[node] + t.edgeCount[node];
  for (let e = t.edgeStart[node]; e < eEnd; e++) {
    next.length = 0;
    const b = t.edgeByte[e];
    for (let i = 0; i < states.length; i++) step(states[i], b, next);
    if (next.length === 0) continue;
    const c = t.edgeChild[e];
    for (let k = t.tokStart[c], kEnd = k + t.tokCount[c]; k < kEnd; k++) {
      const id = t.tokIds[k];
      mask[id >>> 5] |= 1 << (id & 31);
    }
    if (t.edgeCount[c] > 0) walk(t, c, next, mask, depth + 1);
  }
  next.length = 0;
}

/**
 * Sets every disallowed logit to -Infinity in place. `logits` may be longer than the vocabulary (models pad
 * their output layer); ids past the mask are disallowed.
 */
export function applyMask(logits: Float32Array, mask: TokenMask): void {
  const n = logits.length;
  for (let w = 0; w < mask.length; w++) {
    const bits = mask[w];
    if (bits === -1 || bits === 0xffffffff) continue;
    const base = w << 5;
    if (bits === 0) {
      logits.fill(-Infinity, base, Math.min(base + 32, n));
      continue;
    }
    for (let i = 0; i < 32; i++) {
      if (!(bits & (1 << i)) && base + i < n) logits[base + i] = -Infinity;
    }
  }
  if (n > mask.length << 5) logits.fill(-Infinity, mask.length << 5);
}

/** How many tokens a mask allows. */
export function maskCount(mask: TokenMask): number {
  let c = 0;
  for (let w = 0; w < mask.length; w++) {
    let v = mask[w];
    v = v - ((v >>> 1) & 0x55555555);
    v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
    c += (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  return c;
}

export function maskHas(mask: TokenMask, id: number): boolean {
  return (mask[id >>> 5] & (1 << (id & 31))) !== 0;
}

/** The allowed ids, ascending. */
export function maskIds(mask: TokenMask): number[] {
  const out: number[] = [];
  for (let w = 0; w < mask.length; w++) {
    let bits = mask[w];
    while (bits !== 0) {
      const i = 31 - Math.clz32(bits & -bits);
      out.push((w << 5) + i);
      bits &= bits - 1;
    }
  }
  return out;
}

/**
 * The chat engine's logits-processor plug-in (ChatLogitsProcessor): masks each row, follows each token.
 * After a token the grammar refused (it cannot be sampled from a masked row; only EOS forced by the engine
 * could be) the processor allows only EOS, so generation ends instead of producing invalid output.
 */
export class ConstrainedLogits {
  readonly matcher: Matcher;
  #broken = false;

  constructor(grammar: Grammar, index: VocabIndex) {
    this.matcher = grammar.matcher(index);
  }

  process(logits: Float32Array): void {
    if (this.#broken || this.matcher.finished) {
      const eosOnly = new Uint32Array(this.matcher.index.words);
      for (const id of this.matcher.index.eos) eosOnly[id >>> 5] |= 1 << (id & 31);
      applyMask(logits, eosOnly);
      return;
    }
    applyMask(logits, this.matcher.mask());
  }

  accept(tokenId: number): void {
    if (!this.matcher.accept(tokenId)) this.#broken = true;
  }

  /** Whether every token so far was allowed. */
  get ok(): boolean {
    return !this.#broken;
  }
}

export { VocabIndex };
