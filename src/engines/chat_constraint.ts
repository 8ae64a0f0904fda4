// Owns the chat engines' constrained-decoding plug-in (issue 7): a ChatLogitsProcessor over a compiled grammar
// (constrain/) that also keeps the document closable within the choice's token budget, and the per-tokenizer
// vocabulary index it masks with.
//
// Why a budget: a grammar alone guarantees a valid prefix, not a whole document; a model that never closes
// its string (small or off-distribution models do that) would hit max_tokens with broken JSON. So near the
// end of the budget only tokens after which the shortest completion still fits are allowed, and the last
// tokens close the document; it always parses. When that refused the model's own top choice, `truncated` is
// set and the API reports finish_reason "length" (the document is valid but was cut short, as OpenAI's
// finish_reason says; clients such as the SDK's parse() then refuse it instead of trusting a cut answer).
//
// Cost: outside the last WINDOW tokens a step is the grammar's cached mask plus one completion() walk. Inside
// it every allowed token is checked exactly (clone, accept, completion), except inside a string body, where
// the tokens without quote, backslash or control bytes all leave the structure as it is and are taken or
// refused together.
import {
  applyMask,
  type Grammar,
  type Matcher,
  type TokenMask,
  tokenBytesFromTokenizerJson,
  VocabIndex,
} from "./constrain/mod.ts";
import type { ChatEngine, ChatLogitsProcessor } from "./types.ts";

/** Tokens before the end of the budget from which every step is checked exactly. */
const WINDOW = 24;
/** Most continuation bytes a token ending inside a UTF-8 character leaves due. */
const UTF8_DUE = 3;

/** The vocabulary index of an engine's tokenizer, built on first use and kept while the tokenizer lives. */
export function vocabIndexOf(engine: Pick<ChatEngine, "tokenizerJson" | "eosIds">): VocabIndex {
  const json = engine.tokenizerJson;
  if (json === null || typeof json !== "object") {
    throw new Error("the model's tokenizer has no tokenizer.json: constrained decoding is not available");
  }
  return VocabIndex.cached(json, () => ({
    tokens: tokenBytesFromTokenizerJson(json as Parameters<typeof tokenBytesFromTokenizerJson>[0]),
    eos: [...engine.eosIds],
  }));
}

type Trie = VocabIndex["full"];

/** Per index: which string-body masks (plain[u]) are non-empty, and the EOS mask. */
const extras = new WeakMap<VocabIndex, { plainUsed: boolean[]; eos: TokenMask }>();

function extrasOf(ix: VocabIndex) {
  let e = extras.get(ix);
  if (!e) {
    const eos = new Uint32Array(ix.words);
    for (const id of ix.eos) eos[id >>> 5] |= 1 << (id & 31);
    e = { plainUsed: ix.plain.map((m) => m.some((w) => w !== 0)), eos };
    extras.set(ix, e);
  }
  return e;
}

/**
 * Tokens needed to write `bytes`, by greedy longest match over the vocabulary (the plan the closing steps
 * follow; a byte no token starts with counts as one).
 */
export function tokensToWrite(t: Trie, bytes: ArrayLike<number>): number {
  let n = 0;
  for (let i = 0; i < bytes.length; n++) {
    let node = 0;
    let best = 0;
    for (let j = i; j < bytes.length; j++) {
      const child = childOf(t, node, bytes[j]);
      if (child < 0) break;
      node = child;
      if (t.tokCount[node] > 0) best = j - i + 1;
    }
    i += Math.max(1, best);
  }
  return n;
}

function childOf(t: Trie, node: number, byte: number): number {
  let lo = t.edgeStart[node];
  let hi = lo + t.edgeCount[node] - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const b = t.edgeByte[mid];
    if (b === byte) return t.edgeChild[mid];
    if (b < byte) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** The index of the largest finite logit, or -1. */
function argmax(row: Float32Array): number {
  let best = -1;
  let v = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > v) v = row[best = i];
  return best;
}

/**
 * One choice's constraint: the grammar's mask at each step, a budget of `budget` tokens (end-of-sequence
 * included) within which the document always closes when it can, and "end" from process() once nothing but
 * end-of-sequence may follow (the engine then ends the choice even under min_tokens or ignore_eos).
 */
export class BudgetedConstraint implements ChatLogitsProcessor {
  readonly matcher: Matcher;
  readonly #ix: VocabIndex;
  readonly #budget: number;
  #used = 0;
  #broken = false;
  /** The budget refused the model's own top choice at some step: the document was closed early. */
  truncated = false;

  constructor(grammar: Grammar, index: VocabIndex, budget: number) {
    this.matcher = grammar.matcher(index);
    this.#ix = index;
    this.#budget = budget;
  }

  /** Whether every token so far was allowed (one forced past the mask breaks the document). */
  get ok(): boolean {
    return !this.#broken;
  }

  process(row: Float32Array): "end" | void {
    const m = this.matcher;
    const { eos } = extrasOf(this.#ix);
    if (this.#broken || m.finished) {
      applyMask(row, eos);
      return "end";
    }
    const mask = m.mask();
    applyMask(row, mask);
    let allowed = mask;
    const remaining = this.#budget - this.#used;
    const closing = m.completion();
    // need <= closing.length, so a long way from the end no exact check is needed.
    if (remaining - 1 - closing.length <= WINDOW) {
      const need = tokensToWrite(this.#ix.full, closing);
      if (remaining - 1 - need <= WINDOW) {
        const top = argmax(row);
        allowed = this.#fitting(mask, need, remaining - 2);
        applyMask(row, allowed);
        if (top >= 0 && !(allowed[top >>> 5] & (1 << (top & 31)))) this.truncated = true;
      }
    }
    if (closing.length === 0 && onlyIn(allowed, eos)) return "end";
  }

  accept(tokenId: number): void {
    this.#used++;
    if (!this.matcher.accept(tokenId)) this.#broken = true;
  }

  /**
   * The tokens of `mask` after which the shortest completion takes at most `limit` tokens (EOS when the
   * document is complete); when none do, the ones that leave the least to write.
   */
  #fitting(mask: TokenMask, need: number, limit: number): TokenMask {
    const ix = this.#ix;
    const { plainUsed, eos } = extrasOf(ix);
    const out = new Uint32Array(ix.words);
    // Inside a string body the mask holds every plain token valid from the current UTF-8 state.
    let plain: TokenMask | null = null;
    for (let u = 0; u < ix.plain.length && !plain; u++) {
      if (plainUsed[u] && covers(mask, ix.plain[u])) plain = ix.plain[u];
    }
    const plainFits = plain !== null && need + UTF8_DUE <= limit;
    let least = Infinity;
    const leastIds: number[] = [];
    for (let w = 0; w < mask.length; w++) {
      let bits = mask[w];
      if (bits === 0) continue;
      if (plain) {
        if (plainFits) out[w] |= bits & plain[w];
        bits &= ~plain[w];
      }
      out[w] |= bits & eos[w];
      bits &= ~eos[w];
      while (bits !== 0) {
        const i = 31 - Math.clz32(bits & -bits);
        bits &= bits - 1;
        const id = (w << 5) + i;
        const c = this.matcher.clone();
        if (!c.accept(id)) continue;
        const after = tokensToWrite(ix.full, c.completion());
        if (after <= limit) out[w] |= 1 << i;
        else if (after < least) {
          least = after;
          leastIds.length = 0;
          leastIds.push(id);
        } else if (after === least) leastIds.push(id);
      }
    }
    if (out.every((x) => x === 0)) {
      for (const id of leastIds) out[id >>> 5] |= 1 << (id & 31);
      if (leastIds.length === 0 && plain) out.set(plain.map((x, w) => x & mask[w]));
    }
    return out;
  }
}

/** Every bit of `sub` is in `mask`. */
function covers(mask: TokenMask, sub: TokenMask): boolean {
  for (let w = 0; w < sub.length; w++) if ((sub[w] & ~mask[w]) !== 0) return false;
  return true;
}

/** Every bit of `mask` is in `set` (and mask is not empty). */
function onlyIn(mask: TokenMask, set: TokenMask): boolean {
  let any = false;
  for (let w = 0; w < mask.length; w++) {
    if ((mask[w] & ~set[w]) !== 0) return false;
    if (mask[w] !== 0) any = true;
  }
  return any;
}
