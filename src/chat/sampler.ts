// Owns choosing the next token from a row of logits: logit bias, OpenAI's presence/frequency penalties,
// greedy or temperature / top-k / top-p sampling driven by a seeded PRNG (same seed, same draws), and
// log-probabilities of the model's own distribution. Pure and allocation-free per token: scratch buffers are
// sized once per vocabulary and reused.

import type { ChatSampling, SampleKernel } from "../engines/types.ts";

/** Sampling knobs of one request, already validated (the job's, with the model's defaults filled in). */
export type SamplingParams = ChatSampling;

/**
 * xoshiro128** seeded through splitmix64: fast, 32-bit state words, and fully determined by (seed, stream),
 * so choice i of a request with a seed draws the same numbers on every run.
 */
export class Rng {
  /** The four state words (a native SampleKernel draws from and advances them too). */
  readonly state = new Uint32Array(4);

  constructor(seed: bigint | number, stream = 0) {
    let x = BigInt.asUintN(64, BigInt(seed) ^ (BigInt(stream) * 0x9e3779b97f4a7c15n));
    const words: number[] = [];
    for (let i = 0; i < 2; i++) {
      x = BigInt.asUintN(64, x + 0x9e3779b97f4a7c15n);
      let z = x;
      z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
      z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
      z = z ^ (z >> 31n);
      words.push(Number(z & 0xffffffffn), Number(z >> 32n));
    }
    this.state.set(words);
    if ((words[0] | words[1] | words[2] | words[3]) === 0) this.state[0] = 1;
  }

  /** Uniform in [0, 1). */
  next(): number {
    const s = this.state;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result / 4294967296;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** A random 63-bit seed for requests that bring none. */
export function randomSeed(): bigint {
  const w = crypto.getRandomValues(new Uint32Array(2));
  return (BigInt(w[0] & 0x7fffffff) << 32n) | BigInt(w[1]);
}

/** Counts of generated tokens for the penalties, reset per choice in O(distinct tokens). */
export class TokenCounts {
  readonly counts: Int32Array;
  readonly #seen: number[] = [];

  constructor(vocabSize: number) {
    this.counts = new Int32Array(vocabSize);
  }

  add(id: number): void {
    if (id < 0 || id >= this.counts.length) return;
    if (this.counts[id]++ === 0) this.#seen.push(id);
  }

  /** Distinct ids seen so far. */
  get seen(): readonly number[] {
    return this.#seen;
  }

  reset(): void {
    for (const id of this.#seen) this.counts[id] = 0;
    this.#seen.length = 0;
  }
}

/** Applies logit bias, then presence/frequency penalties, in place (OpenAI's formula). */
export function applyBiasAndPenalties(logits: Float32Array, p: SamplingParams, counts: TokenCounts): void {
  for (const [id, bias] of p.logitBias) if (id >= 0 && id < logits.length) logits[id] += bias;
  if (p.presencePenalty === 0 && p.frequencyPenalty === 0) return;
  const c = counts.counts;
  for (const id of counts.seen) {
    if (id < logits.length) logits[id] -= c[id] * p.frequencyPenalty + p.presencePenalty;
  }
}

/** Index of the largest value; the lowest index wins ties, so greedy decoding is deterministic. */
export function argmax(x: Float32Array): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < x.length; i++) {
    if (x[i] > bestValue) {
      bestValue = x[i];
      best = i;
    }
  }
  return best;
}

/** Reusable scratch for sampling over one vocabulary size. */
export class Sampler {
  readonly #weights: Float32Array;
  readonly #order: Uint32Array;

  /** `kernel`: the backend's native twin of sample() (greedy exactly, draws the same to ~1e-7, much faster). */
  constructor(vocabSize: number, private readonly kernel?: SampleKernel) {
    this.#weights = new Float32Array(vocabSize);
    this.#order = new Uint32Array(vocabSize);
  }

  /** Picks the next token from (already biased/penalized/masked) logits. */
  sample(logits: Float32Array, p: SamplingParams, rng: Rng): number {
    if (this.kernel) {
      const token = this.kernel(logits, p.temperature, p.topK, p.topP, rng.state);
      if (token >= 0) return token;
    }
    return this.sampleJs(logits, p, rng);
  }

  /** sample() in JavaScript (backends without a native kernel, and the kernel's reference in tests). */
  sampleJs(logits: Float32Array, p: SamplingParams, rng: Rng): number {
    if (p.temperature === 0) return argmax(logits);
    const n = logits.length;
    const w = this.#weights.length === n ? this.#weights : new Float32Array(n);
    let max = -Infinity;
    for (let i = 0; i < n; i++) if (logits[i] > max) max = logits[i];
    if (max === -Infinity) return argmax(logits);
    const inv = 1 / p.temperature;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const v = Math.exp((logits[i] - max) * inv);
      w[i] = v;
      total += v;
    }
    const useTopK = p.topK > 0 && p.topK < n;
    if (p.topP >= 1 && !useTopK) {
      // Plain sampling: one draw against the cumulative mass, no sort.
      let r = rng.next() * total;
      let last = 0;
      for (let i = 0; i < n; i++) {
        if (w[i] === 0) continue;
        last = i;
        r -= w[i];
        if (r < 0) return i;
      }
      return last;
    }
    return this.#sampleTruncated(w, n, total, p, rng);
  }

  /**
   * Top-k / top-p over the weights. Sorting the whole vocabulary per token is slow, so first only the tokens
   * above a small weight are sorted: every token left out weighs less than every candidate, so when the
   * candidates alone reach the nucleus (and the k), the result is exactly the full sort's.
   */
  #sampleTruncated(w: Float32Array, n: number, total: number, p: SamplingParams, rng: Rng): number {
    const order = this.#order.length === n ? this.#order : new Uint32Array(n);
    const k = p.topK > 0 ? Math.min(p.topK, n) : n;
    const target = p.topP * total;
    // Floors are relative to the most likely token (weight 1); -1 takes the whole vocabulary.
    for (const floor of [1e-4, 1e-8, -1]) {
      let m = 0;
      let mass = 0;
      for (let i = 0; i < n; i++) {
        if (w[i] > floor) {
          order[m++] = i;
          mass += w[i];
        }
      }
      // Exact only when the cut falls inside the candidates: they hold k tokens or the nucleus mass.
      if (floor >= 0 && m < k && mass < target) continue;
      const cand = order.subarray(0, m);
      cand.sort((a, b) => (w[b] - w[a]) || (a - b));
      // The shortest prefix reaching top_p of the mass, at most k tokens, at least one.
      let keep = 0;
      let kept = 0;
      const limit = Math.min(k, m);
      while (keep < limit) {
        kept += w[cand[keep]];
        keep++;
        if (kept >= target) break;
      }
      let r = rng.next() * kept;
      for (let j = 0; j < keep; j++) {
        r -= w[cand[j]];
        if (r < 0) return cand[j];
      }
      return cand[keep - 1];
    }
    return argmax(w);
  }
}

/** One token with its log-probability. */
export interface TokenLogprob {
  id: number;
  logprob: number;
}

/**
 * Log-softmax of the raw logits for the chosen token and the `top` most likely alternatives (highest
 * first), in two passes over the row and a small insertion buffer. These are the model's own probabilities,
 * before bias, penalties, constraints and temperature.
 */
export function logprobsOf(
  logits: Float32Array,
  chosen: number,
  top: number,
): { logprob: number; top: TokenLogprob[] } {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  const lse = max + Math.log(sum);
  const ids: number[] = [];
  const vals: number[] = [];
  if (top > 0) {
    for (let i = 0; i < logits.length; i++) {
      const v = logits[i];
      if (ids.length === top && v <= vals[top - 1]) continue;
      let j = ids.length < top ? ids.length : top - 1;
      while (j > 0 && vals[j - 1] < v) {
        if (j < top) {
          vals[j] = vals[j - 1];
          ids[j] = ids[j - 1];
        }
        j--;
      }
      vals[j] = v;
      ids[j] = i;
    }
  }
  return {
    logprob: finite(logits[chosen] - lse),
    top: ids.map((id, i) => ({ id, logprob: finite(vals[i] - lse) })),
  };
}

/** JSON has no -Infinity; a token the model rules out entirely reports a very small log-probability. */
function finite(x: number): number {
  return Number.isFinite(x) ? x : -9999;
}
