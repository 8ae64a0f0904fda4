// Tests the token picker: seeded PRNG determinism, greedy ties, sampling frequencies, exact top-k/top-p
// cut-offs (including flat distributions where the candidate shortcut must fall back), OpenAI's penalties,
// logit bias, and log-probabilities.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  applyBiasAndPenalties,
  argmax,
  logprobsOf,
  randomSeed,
  Rng,
  Sampler,
  type SamplingParams,
  TokenCounts,
} from "./sampler.ts";

const base: SamplingParams = {
  temperature: 1,
  topP: 1,
  topK: 0,
  presencePenalty: 0,
  frequencyPenalty: 0,
  logitBias: new Map(),
};

function draws(rng: Rng, n: number): number[] {
  return Array.from({ length: n }, () => rng.next());
}

Deno.test("Rng: same seed and stream give the same numbers, in [0, 1)", () => {
  const a = draws(new Rng(42n, 0), 1000);
  assert.deepEqual(a, draws(new Rng(42n, 0), 1000));
  assert.ok(a.every((x) => x >= 0 && x < 1));
  assert.notDeepEqual(a, draws(new Rng(42n, 1), 1000));
  assert.notDeepEqual(a, draws(new Rng(43n, 0), 1000));
  // Negative and huge seeds are fine (OpenAI's seed is any int64).
  assert.deepEqual(draws(new Rng(-5n), 3), draws(new Rng(-5n), 3));
  assert.equal(draws(new Rng(2n ** 63n - 1n), 3).length, 3);
  const mean = a.reduce((s, x) => s + x, 0) / a.length;
  assert.ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
});

Deno.test("randomSeed gives differing non-negative seeds", () => {
  const a = randomSeed();
  const b = randomSeed();
  assert.ok(a >= 0n && b >= 0n);
  assert.notEqual(a, b);
});

Deno.test("argmax: the lowest index wins ties", () => {
  assert.equal(argmax(new Float32Array([1, 3, 3, 2])), 1);
  assert.equal(argmax(new Float32Array([-Infinity, -Infinity])), 0);
});

Deno.test("temperature 0 is greedy whatever the PRNG", () => {
  const s = new Sampler(4);
  const logits = new Float32Array([0.1, 2, 1.9, -1]);
  for (let seed = 0; seed < 20; seed++) {
    assert.equal(s.sample(logits, { ...base, temperature: 0 }, new Rng(BigInt(seed))), 1);
  }
});

function frequencies(logits: number[], p: SamplingParams, n = 20000, seed = 7n): number[] {
  const s = new Sampler(logits.length);
  const rng = new Rng(seed);
  const row = new Float32Array(logits);
  const counts = new Array(logits.length).fill(0);
  for (let i = 0; i < n; i++) counts[s.sample(row, p, rng)]++;
  return counts.map((c) => c / n);
}

Deno.test("temperature 1 samples the softmax distribution", () => {
  const f = frequencies([Math.log(0.5), Math.log(0.3), Math.log(0.2)], base);
  assert.ok(
    Math.abs(f[0] - 0.5) < 0.02 && Math.abs(f[1] - 0.3) < 0.02 && Math.abs(f[2] - 0.2) < 0.02,
    `${f}`,
  );
});

Deno.test("higher temperature flattens, lower sharpens", () => {
  const logits = [Math.log(0.7), Math.log(0.3)];
  assert.ok(frequencies(logits, { ...base, temperature: 2 })[0] < 0.65);
  assert.ok(frequencies(logits, { ...base, temperature: 0.3 })[0] > 0.9);
});

Deno.test("top_p keeps the smallest set reaching the mass; top_k keeps the k best", () => {
  const logits = [Math.log(0.6), Math.log(0.3), Math.log(0.1)];
  assert.deepEqual(frequencies(logits, { ...base, topP: 0.5 }, 2000), [1, 0, 0]);
  const f = frequencies(logits, { ...base, topP: 0.8 });
  assert.equal(f[2], 0);
  assert.ok(Math.abs(f[0] - 2 / 3) < 0.02, `${f}`);
  assert.deepEqual(frequencies(logits, { ...base, topK: 1 }, 2000), [1, 0, 0]);
  const k2 = frequencies(logits, { ...base, topK: 2 });
  assert.equal(k2[2], 0);
});

Deno.test("top-k/top-p shortcut matches a full sort, also on flat distributions", () => {
  fc.assert(
    fc.property(
      fc.array(fc.float({ min: -20, max: 20, noNaN: true }), { minLength: 2, maxLength: 300 }),
      fc.double({ min: 0.01, max: 0.99, noNaN: true }),
      fc.integer({ min: 0, max: 50 }),
      fc.integer({ min: 0, max: 1000 }),
      fc.boolean(),
      (values, topP, topK, seed, flat) => {
        const logits = new Float32Array(flat ? values.map((v) => v / 1e6) : values);
        const p = { ...base, topP, topK };
        // The allowed set by brute force: sort everything, cut by k and by mass.
        const w = Array.from(logits, (l) => Math.exp(l - Math.max(...logits)));
        const order = w.map((_, i) => i).sort((a, b) => w[b] - w[a] || a - b);
        const total = w.reduce((s, x) => s + x, 0);
        const allowed = new Set<number>();
        let mass = 0;
        for (const i of order) {
          if (topK > 0 && allowed.size >= topK) break;
          allowed.add(i);
          mass += w[i];
          if (mass >= topP * total * (1 - 1e-6)) break;
        }
        const s = new Sampler(logits.length);
        const rng = new Rng(BigInt(seed));
        for (let i = 0; i < 20; i++) {
          const t = s.sample(logits, p, rng);
          // Float rounding may admit the next token of equal weight at the boundary.
          if (!allowed.has(t)) {
            const boundary = w[order[allowed.size]] ?? -1;
            assert.ok(Math.abs(w[t] - boundary) < 1e-6 * total, `token ${t} outside the nucleus`);
          }
        }
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("same seed, same draws: sampling is reproducible", () => {
  const logits = new Float32Array(Array.from({ length: 100 }, (_, i) => Math.sin(i)));
  const run = (seed: bigint) => {
    const s = new Sampler(100);
    const rng = new Rng(seed);
    return Array.from({ length: 50 }, () => s.sample(logits, { ...base, topP: 0.9 }, rng));
  };
  assert.deepEqual(run(11n), run(11n));
  assert.notDeepEqual(run(11n), run(12n));
});

Deno.test("penalties follow OpenAI: count * frequency + presence, generated tokens only", () => {
  const counts = new TokenCounts(4);
  counts.add(1);
  counts.add(1);
  counts.add(3);
  const logits = new Float32Array([0, 0, 0, 0]);
  applyBiasAndPenalties(logits, { ...base, presencePenalty: 0.5, frequencyPenalty: 0.25 }, counts);
  assert.deepEqual([...logits], [0, -(2 * 0.25 + 0.5), 0, -(0.25 + 0.5)]);
  counts.reset();
  assert.deepEqual([...counts.counts], [0, 0, 0, 0]);
  assert.equal(counts.seen.length, 0);
  // Negative penalties encourage repetition.
  counts.add(2);
  const row = new Float32Array(4);
  applyBiasAndPenalties(row, { ...base, presencePenalty: -1, frequencyPenalty: 0 }, counts);
  assert.equal(row[2], 1);
});

Deno.test("logit bias: -100 bans a token, +100 all but forces it", () => {
  const counts = new TokenCounts(3);
  const logits = new Float32Array([5, 1, 0]);
  applyBiasAndPenalties(logits, { ...base, logitBias: new Map([[0, -100], [9, 5]]) }, counts);
  assert.equal(argmax(logits), 1);
  const row = new Float32Array([5, 1, 0]);
  applyBiasAndPenalties(row, { ...base, logitBias: new Map([[2, 100]]) }, counts);
  const s = new Sampler(3);
  const rng = new Rng(1n);
  for (let i = 0; i < 200; i++) assert.equal(s.sample(row, base, rng), 2);
});

Deno.test("logprobsOf: log-softmax of the chosen token and the best alternatives, best first", () => {
  const logits = new Float32Array([Math.log(0.1), Math.log(0.6), Math.log(0.3)]);
  const r = logprobsOf(logits, 2, 2);
  assert.ok(Math.abs(r.logprob - Math.log(0.3)) < 1e-6);
  assert.deepEqual(r.top.map((t) => t.id), [1, 2]);
  assert.ok(Math.abs(r.top[0].logprob - Math.log(0.6)) < 1e-6);
  assert.deepEqual(logprobsOf(logits, 0, 0).top, []);
  assert.equal(logprobsOf(logits, 0, 5).top.length, 3);
  // A ruled-out token still gets a finite (JSON-safe) value.
  assert.ok(Number.isFinite(logprobsOf(new Float32Array([0, -Infinity]), 1, 0).logprob));
});
