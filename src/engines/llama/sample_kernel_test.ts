// The llama shim's native sampler (native/sampling.h) against its JavaScript reference below, which does each
// float step with Math.fround, sums in the same blocks and lanes and walks the same way: the same token and
// the same Rng state after every draw, for plain sampling, top-k, top-p (flat and peaked rows, where the radix
// sort and the candidate floors decide), masked tokens, and Qwen's 152k vocabulary. And that the float weights
// are the softmax the pipeline's JavaScript sampler draws from (within float rounding).
import assert from "node:assert/strict";
import { argmax, Rng, Sampler } from "../../chat/sampler.ts";
import { openLlama } from "./ffi.ts";

const fround = Math.fround;
const BLOCK = 256;
const LANES = 16;
const FLOOR = -80;
const LOG2E = fround(Math.LOG2E);
const SHIFTER = 12582912;
const LN2_HI = 0.693145751953125;
const LN2_LO = fround(Math.LN2 - LN2_HI);
const C = [5040, 720, 120, 24, 6].map((d) => fround(1 / d));

/** smp_expf in float steps. */
function expf32(x: number): number {
  if (!(x >= FLOOR)) return 0;
  const t = fround(fround(x * LOG2E) + SHIFTER);
  const k = t - SHIFTER;
  const r = fround(fround(x - fround(k * LN2_HI)) - fround(k * LN2_LO));
  let p = C[0];
  for (const c of [...C.slice(1), 0.5, 1, 1]) p = fround(fround(p * r) + c);
  return fround(p * 2 ** k);
}

/** smp_sample in JavaScript. */
function reference(logits: Float32Array, temperature: number, topK: number, topP: number, rng: Rng): number {
  const n = logits.length;
  let max = -Infinity;
  for (const x of logits) if (x > max) max = x;
  const inv = fround(1 / temperature);
  const w = new Float32Array(n);
  const bw: number[] = [];
  for (let start = 0; start < n; start += BLOCK) {
    const c = new Float64Array(LANES);
    for (let i = start; i < Math.min(start + BLOCK, n); i++) {
      w[i] = expf32(fround(fround(logits[i] - max) * inv));
      c[(i - start) % LANES] += w[i];
    }
    for (let half = LANES / 2; half > 0; half >>= 1) for (let j = 0; j < half; j++) c[j] += c[j + half];
    bw.push(c[0]);
  }
  let total = 0;
  for (const b of bw) total += b;
  if (topP >= 1 && !(topK > 0 && topK < n)) {
    let r = rng.next() * total;
    for (let b = 0; b < bw.length; b++) {
      if (r - bw[b] >= 0) {
        r -= bw[b];
        continue;
      }
      for (let i = b * BLOCK; i < Math.min((b + 1) * BLOCK, n); i++) {
        if (w[i] === 0) continue;
        r -= w[i];
        if (r < 0) return i;
      }
    }
    for (let i = n - 1; i > 0; i--) if (w[i] !== 0) return i;
    return 0;
  }
  const k = topK > 0 ? Math.min(topK, n) : n;
  const target = topP * total;
  for (const floor of [1e-4, 1e-8, -1]) {
    const cand: number[] = [];
    // The mass in lanes, folded in halves, as smp_sample sums it.
    const lanes = new Float64Array(LANES);
    for (let i = 0; i < n; i++) if (w[i] > floor) cand.push(i), lanes[i % LANES] += w[i];
    for (let half = LANES / 2; half > 0; half >>= 1) {
      for (let j = 0; j < half; j++) lanes[j] += lanes[j + half];
    }
    const mass = lanes[0];
    if (floor >= 0 && cand.length < k && mass < target) continue;
    cand.sort((a, b) => (w[b] - w[a]) || (a - b));
    let keep = 0;
    let kept = 0;
    while (keep < Math.min(k, cand.length)) {
      kept += w[cand[keep++]];
      if (kept >= target) break;
    }
    let r = rng.next() * kept;
    for (let j = 0; j < keep; j++) if ((r -= w[cand[j]]) < 0) return cand[j];
    return cand[keep - 1];
  }
  throw new Error("unreachable");
}

function rows(n: number, count: number, seed: number): Float32Array[] {
  let x = seed >>> 0 || 1;
  const rand = () => ((x ^= x << 13, x ^= x >>> 17, x ^= x << 5) >>> 0) / 4294967296;
  return Array.from({ length: count }, (_, r) => {
    const row = new Float32Array(n);
    // Alternately flat (random weights) and peaked (a trained model's), some with masked tokens and ties, some
    // spanning more than the exponential's floor.
    for (let i = 0; i < n; i++) {
      row[i] = r % 2 ? rand() * 3 : (rand() < 0.01 ? 8 + rand() * 4 : rand() * 2 - 6);
    }
    if (r % 3 === 0) { for (let i = 0; i < n; i += 7) row[i] = -Infinity; }
    if (r % 5 === 0) { for (let i = 0; i < 50; i++) row[i] = 2.5; }
    if (r % 7 === 0) { for (let i = 0; i < n; i += 3) row[i] = -90 - rand() * 30; }
    return row;
  });
}

const SETTINGS = [
  { temperature: 1, topP: 1, topK: 0 },
  { temperature: 0.7, topP: 0.95, topK: 0 },
  { temperature: 1.5, topP: 1, topK: 40 },
  { temperature: 1, topP: 0.5, topK: 200 },
  { temperature: 0.2, topP: 0.9, topK: 0 },
  { temperature: 0.33, topP: 1, topK: 0 },
];

Deno.test("native sampler: the same draws as its JavaScript reference, the same Rng state after", () => {
  const sym = openLlama();
  let draws = 0;
  for (const n of [50, 4096, 49152, 151936]) {
    for (const [i, s] of SETTINGS.entries()) {
      const a = new Rng(BigInt(1000 + i), n);
      const b = new Rng(BigInt(1000 + i), n);
      for (const row of rows(n, n > 50000 ? 12 : 30, n + i)) {
        const want = reference(row, s.temperature, s.topK, s.topP, a);
        const got = sym.lshim_sample(row, n, s.temperature, s.topK, s.topP, b.state);
        assert.equal(got, want, `vocab ${n}, ${JSON.stringify(s)}, draw ${draws}`);
        assert.deepEqual([...b.state], [...a.state]);
        draws++;
      }
    }
  }
  assert.equal(draws, 3 * 6 * 30 + 6 * 12);
});

Deno.test("native sampler: at temperature 0 argmax() exactly, and no draw", () => {
  const sym = openLlama();
  const state = new Rng(5n).state;
  const before = [...state];
  let checked = 0;
  for (const n of [1, 15, 16, 17, 50, 4096, 49152, 151936]) {
    for (const row of rows(n, 8, n * 3)) {
      assert.equal(sym.lshim_sample(row, n, 0, 40, 0.9, state), argmax(row), `vocab ${n}`);
      checked++;
    }
  }
  // Ties (the lowest index wins, in and across lanes), NaN (never wins), nothing above -inf (0), a lone
  // finite value past the lanes, -0 and 0.
  const cases: [number[], number][] = [
    [[1, 3, 3, 2], 1],
    [[...Array(40).fill(0), 7, ...Array(20).fill(0), 7], 40],
    [[NaN, 1, NaN, 2, NaN], 3],
    [[NaN, NaN], 0],
    [[-Infinity, -Infinity, -Infinity], 0],
    [[...Array(33).fill(-Infinity), -5], 33],
    [[-0, 0, -1], 0],
    [[-1, 0, -0], 1],
  ];
  for (const [values, want] of cases) {
    const row = Float32Array.from(values);
    assert.equal(argmax(row), want, `reference ${values}`);
    assert.equal(sym.lshim_sample(row, row.length, 0, 0, 1, state), want, `${values}`);
    checked++;
  }
  assert.deepEqual([...state], before);
  assert.equal(checked, 8 * 8 + 8);
});

Deno.test("native sampler: its float exponential is e^x within 3 float ulps, 0 below -80", () => {
  for (let x = -80; x <= 0; x += 0.0137) {
    const want = Math.exp(fround(x));
    assert.ok(Math.abs(expf32(fround(x)) - want) <= 3 * 2 ** -23 * want, `x = ${x}`);
  }
  assert.equal(expf32(-80.5), 0);
  assert.equal(expf32(-Infinity), 0);
  assert.equal(expf32(0), 1);
});

Deno.test("native sampler: draws follow the JavaScript sampler's distribution", () => {
  const sym = openLlama();
  const n = 8;
  const logits = Float32Array.from([0, 1, 2, 3, -1, -2, 0.5, 2.5]);
  for (const temperature of [0.5, 1, 1.7]) {
    const native = new Sampler(n, (l, t, k, p, s) => sym.lshim_sample(l, l.length, t, k, p, s));
    const js = new Sampler(n);
    const p = {
      temperature,
      topP: 1,
      topK: 0,
      presencePenalty: 0,
      frequencyPenalty: 0,
      logitBias: new Map(),
    };
    const a = new Rng(7n);
    const b = new Rng(7n);
    const countA = new Array(n).fill(0);
    const countB = new Array(n).fill(0);
    const N = 20000;
    for (let i = 0; i < N; i++) countA[native.sample(logits, p, a)]++, countB[js.sampleJs(logits, p, b)]++;
    const z = logits.map((l) => Math.exp(l / temperature));
    const sum = z.reduce((x, y) => x + y, 0);
    for (let i = 0; i < n; i++) {
      const expect = z[i] / sum * N;
      const slack = 5 * Math.sqrt(expect) + 1;
      assert.ok(
        Math.abs(countA[i] - expect) < slack,
        `native token ${i} at ${temperature}: ${countA[i]} vs ${expect}`,
      );
      assert.ok(
        Math.abs(countB[i] - expect) < slack,
        `js token ${i} at ${temperature}: ${countB[i]} vs ${expect}`,
      );
    }
  }
});
