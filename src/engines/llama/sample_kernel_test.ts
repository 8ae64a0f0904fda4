// The llama shim's native sampler (native/sampling.h) against the pipeline's JavaScript one: the same token
// and the same Rng state after every draw, for plain sampling, top-k, top-p (flat and peaked rows, where the
// radix sort and the candidate floors decide) and logits with masked tokens.
import assert from "node:assert/strict";
import { Rng, Sampler } from "../../chat/sampler.ts";
import { openLlama } from "./ffi.ts";

function rows(n: number, count: number, seed: number): Float32Array[] {
  let x = seed >>> 0 || 1;
  const rand = () => ((x ^= x << 13, x ^= x >>> 17, x ^= x << 5) >>> 0) / 4294967296;
  return Array.from({ length: count }, (_, r) => {
    const row = new Float32Array(n);
    // Alternately flat (random weights) and peaked (a trained model's), some with masked tokens and ties.
    for (let i = 0; i < n; i++) {
      row[i] = r % 2 ? rand() * 3 : (rand() < 0.01 ? 8 + rand() * 4 : rand() * 2 - 6);
    }
    if (r % 3 === 0) { for (let i = 0; i < n; i += 7) row[i] = -Infinity; }
    if (r % 5 === 0) { for (let i = 0; i < 50; i++) row[i] = 2.5; }
    return row;
  });
}

Deno.test("native sampler: the same draws as the JavaScript sampler, the same Rng state after", () => {
  const sym = openLlama();
  const kernel = (l: Float32Array, t: number, k: number, p: number, s: Uint32Array) =>
    sym.lshim_sample(l, l.length, t, k, p, s);
  const settings = [
    { temperature: 1, topP: 1, topK: 0 },
    { temperature: 0.7, topP: 0.95, topK: 0 },
    { temperature: 1.5, topP: 1, topK: 40 },
    { temperature: 1, topP: 0.5, topK: 200 },
    { temperature: 0.2, topP: 0.9, topK: 0 },
  ];
  let draws = 0;
  for (const n of [50, 4096, 49152]) {
    const js = new Sampler(n);
    const native = new Sampler(n, kernel);
    for (const [i, s] of settings.entries()) {
      const p = { ...s, presencePenalty: 0, frequencyPenalty: 0, logitBias: new Map<number, number>() };
      const a = new Rng(BigInt(1000 + i), n);
      const b = new Rng(BigInt(1000 + i), n);
      for (const row of rows(n, 40, n + i)) {
        const want = js.sampleJs(row, p, a);
        const got = native.sample(row, p, b);
        assert.equal(got, want, `vocab ${n}, ${JSON.stringify(s)}, draw ${draws}`);
        assert.deepEqual([...b.state], [...a.state]);
        draws++;
      }
    }
  }
  assert.equal(draws, 3 * 5 * 40);
});
