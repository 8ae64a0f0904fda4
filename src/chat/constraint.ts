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
// Cost: per step, the grammar's cached mask and one completion() walk (kept by the matcher until its next
// accept). Within HORIZON tokens of the end, a plan (the fewest tokens that close the document) is kept (planned
// anew only when the new completion is not what its rest writes), and the first time a state is met every token it
// allows is checked once (clone, accept, completion) and the result kept with the state's cached mask;
// inside a string body the tokens without quote, backslash or control bytes all leave the structure as it
// is and are taken or refused together. With a 49152-token vocabulary that is ~0.1 ms a step.
import {
  applyMask,
  type Grammar,
  type Matcher,
  tokenBytesFromTokenizerJson,
  type TokenMask,
  VocabIndex,
} from "./constrain/mod.ts";
import type { ChatBackend, ChatLogitsProcessor } from "../engines/types.ts";

/**
 * Steps whose slack (tokens left beyond the completion and EOS) is above this are not checked: no single
 * token of a realistic schema adds that many tokens to the completion.
 */
const HORIZON = 256;
/** Most continuation bytes a token ending inside a UTF-8 character leaves due. */
const UTF8_DUE = 3;

/** The vocabulary index of an engine's tokenizer, built on first use and kept while the tokenizer lives. */
export function vocabIndexOf(
  engine:
    & Pick<ChatBackend, "tokenizerJson" | "eosIds" | "tokenBytes">
    & Partial<Pick<ChatBackend, "tokenId">>,
  markers: readonly string[] = [],
): VocabIndex {
  if (engine.tokenBytes) {
    const bytes = engine.tokenBytes.bind(engine);
    // The family's control-token markers are text the constraint may write (a forced Harmony call's
    // `<|channel|>`), as the reader sees them; other control tokens are never allowed.
    return VocabIndex.cached(engine, () => {
      const tokens = [...bytes()];
      for (const m of markers) {
        const id = engine.tokenId?.(m);
        if (id !== undefined && tokens[id] === null) tokens[id] = new TextEncoder().encode(m);
      }
      return { tokens, eos: [...engine.eosIds] };
    });
  }
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
 * The fewest tokens that write exactly `bytes` (ids in order), by dynamic programming over the vocabulary
 * trie; null when some byte cannot be written at all.
 */
export function planTokens(t: Trie, bytes: ArrayLike<number>): number[] | null {
  const n = bytes.length;
  const best = new Int32Array(n + 1).fill(0x7fffffff);
  const len = new Int32Array(n);
  const id = new Int32Array(n);
  best[n] = 0;
  for (let i = n - 1; i >= 0; i--) {
    let node = 0;
    for (let j = i; j < n; j++) {
      node = childOf(t, node, bytes[j]);
      if (node < 0) break;
      if (t.tokCount[node] > 0 && best[j + 1] !== 0x7fffffff && best[j + 1] + 1 < best[i]) {
        best[i] = best[j + 1] + 1;
        len[i] = j + 1 - i;
        id[i] = t.tokIds[t.tokStart[node]];
      }
    }
  }
  if (best[0] === 0x7fffffff) return null;
  const out: number[] = [];
  for (let i = 0; i < n; i += len[i]) out.push(id[i]);
  return out;
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

/** How many tokens writing `bytes` takes at least (its byte count when it cannot be written). */
export function tokensToWrite(t: Trie, bytes: ArrayLike<number>): number {
  return planTokens(t, bytes)?.length ?? bytes.length;
}

/** The index of the largest finite logit, or -1. */
function argmax(row: Float32Array): number {
  let best = -1;
  let v = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > v) v = row[best = i];
  return best;
}

/**
 * What the tokens a state allows leave to write: for each allowed token (but EOS, and but the plain tokens
 * of a string body, which only change the UTF-8 state), the fewest tokens that complete the document after
 * it. Depends on the state only, and a state's mask is one cached object, so it is computed once per state.
 */
interface StateInfo {
  ids: Int32Array;
  needs: Int32Array;
  /** The largest of `needs` (-1 when there are none). */
  maxNeed: number;
  /** In a string body: the plain tokens valid from its UTF-8 state (all in the mask). */
  plain: TokenMask | null;
}

const states = new WeakMap<TokenMask, StateInfo>();

function stateInfo(m: Matcher, mask: TokenMask, ix: VocabIndex): StateInfo {
  let info = states.get(mask);
  if (info) return info;
  const { plainUsed, eos } = extrasOf(ix);
  let plain: TokenMask | null = null;
  for (let u = 0; u < ix.plain.length && !plain; u++) {
    if (plainUsed[u] && covers(mask, ix.plain[u])) plain = ix.plain[u];
  }
  const ids: number[] = [];
  const needs: number[] = [];
  let maxNeed = -1;
  for (let w = 0; w < mask.length; w++) {
    let bits = mask[w] & ~eos[w];
    if (plain) bits &= ~plain[w];
    while (bits !== 0) {
      const i = 31 - Math.clz32(bits & -bits);
      bits &= bits - 1;
      const id = (w << 5) + i;
      const c = m.clone();
      if (!c.accept(id)) continue;
      const need = tokensToWrite(ix.full, c.completion());
      ids.push(id);
      needs.push(need);
      if (need > maxNeed) maxNeed = need;
    }
  }
  info = { ids: Int32Array.from(ids), needs: Int32Array.from(needs), maxNeed, plain };
  states.set(mask, info);
  return info;
}

/**
 * One choice's constraint: the grammar's mask at each step, a budget of `budget` tokens (end-of-sequence
 * included) within which the document always closes when it can, and "end" from process() once nothing but
 * end-of-sequence may follow (the engine then ends the choice even under min_tokens or ignore_eos).
 *
 * Near the end it keeps a plan: tokens that complete the document from the current state. Every step allows
 * only tokens after which some completion still fits (the plan's next token always does, as the rest of the
 * plan completes from where it leads), so once a plan fits, the document closes within the budget.
 */
export class BudgetedConstraint implements ChatLogitsProcessor {
  readonly matcher: Matcher;
  readonly #ix: VocabIndex;
  readonly #budget: number;
  #used = 0;
  #broken = false;
  /** Tokens completing the document from here (null: not computed, far from the end). */
  #plan: number[] | null = null;
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
    const ix = this.#ix;
    const { eos } = extrasOf(ix);
    if (this.#broken || m.finished) {
      applyMask(row, eos);
      return "end";
    }
    const mask = m.mask();
    applyMask(row, mask);
    const remaining = this.#budget - this.#used;
    const closing = m.completion();
    // What one token adds to the completion is bounded in practice: far from the end, nothing to check.
    if (remaining - 1 - closing.length > HORIZON) {
      this.#plan = null;
    } else {
      const plan = this.#plan ??= planTokens(ix.full, closing) ?? [];
      // After this token, a completion and EOS must fit in what is left.
      const limit = remaining - 2;
      const info = stateInfo(m, mask, ix);
      const plainFits = plan.length + UTF8_DUE + 1 <= limit;
      if (info.maxNeed > limit || (info.plain && !plainFits)) {
        // The model's own top choice, unless the budget already refused one (truncated stays set).
        const top = this.truncated ? -1 : argmax(row);
        const allowed = fitting(mask, info, eos, limit, plainFits);
        if (plan.length) allowed[plan[0] >>> 5] |= 1 << (plan[0] & 31);
        applyMask(row, allowed);
        if (top >= 0 && !(allowed[top >>> 5] & (1 << (top & 31)))) this.truncated = true;
        if (closing.length === 0 && onlyIn(allowed, eos)) return "end";
        return;
      }
    }
    if (closing.length === 0 && onlyIn(mask, eos)) return "end";
  }

  /** A token spent outside the document (a thinking block before it): it still uses the budget. */
  skip(): void {
    this.#used++;
    this.#plan = null;
  }

  accept(tokenId: number): void {
    this.#used++;
    const m = this.matcher;
    if (!m.accept(tokenId)) {
      this.#broken = true;
      return;
    }
    const plan = this.#plan;
    if (plan === null || m.finished) return;
    // The plan's rest still completes the document when the token wrote what its next step would have.
    const rest = plan.length && sameBytes(this.#ix.tokens[plan[0]], this.#ix.tokens[tokenId])
      ? plan.slice(1)
      : null;
    const closing = m.completion();
    // A rest that writes exactly the new completion is a shortest plan for it already (the plan was shortest
    // for every suffix of the old one), so only a changed completion is planned anew.
    if (rest && writes(this.#ix.tokens, rest, closing)) {
      this.#plan = rest;
      return;
    }
    const fresh = planTokens(this.#ix.full, closing);
    this.#plan = rest && (!fresh || rest.length <= fresh.length) ? rest : fresh ?? [];
  }
}

/** Whether `ids` write exactly `bytes`. */
function writes(tokens: readonly (Uint8Array | null)[], ids: readonly number[], bytes: Uint8Array): boolean {
  let at = 0;
  for (const id of ids) {
    const t = tokens[id];
    if (!t || at + t.length > bytes.length) return false;
    for (let i = 0; i < t.length; i++) if (t[i] !== bytes[at + i]) return false;
    at += t.length;
  }
  return at === bytes.length;
}

function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The tokens of `mask` after which some completion takes at most `limit` tokens (and EOS when allowed). */
function fitting(
  mask: TokenMask,
  info: StateInfo,
  eos: TokenMask,
  limit: number,
  plainFits: boolean,
): TokenMask {
  const out = new Uint32Array(mask.length);
  for (let w = 0; w < mask.length; w++) out[w] = mask[w] & eos[w];
  if (info.plain && plainFits) { for (let w = 0; w < mask.length; w++) out[w] |= info.plain[w]; }
  for (let k = 0; k < info.ids.length; k++) {
    const id = info.ids[k];
    if (info.needs[k] <= limit) out[id >>> 5] |= 1 << (id & 31);
  }
  return out;
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
