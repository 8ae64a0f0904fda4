import assert from "node:assert/strict";
import {
  DEFAULT_POOLING,
  normalizeInPlace,
  pool,
  poolingFromModules,
  poolingModes,
  truncateAndNormalize,
  UnsupportedPooling,
} from "./embedding_pooling.ts";

// Two rows, seq 3, hidden 2. Row 0 has 2 real tokens (third is padding), row 1 has 3.
const states = new Float32Array([
  1,
  2,
  3,
  6,
  100,
  100, // row 0: tokens (1,2) (3,6) pad (100,100)
  -1,
  0,
  2,
  4,
  5,
  -2, // row 1
]);
const lengths = [2, 3];
const raw = (modes: ("cls" | "max" | "mean" | "mean_sqrt_len" | "weightedmean" | "lasttoken")[]) =>
  pool(states, 2, 3, 2, lengths, { modes, normalize: false, source: "test" }).map((v) => [...v]);

Deno.test("pooling: each mode over real tokens only, padding ignored", () => {
  assert.deepEqual(raw(["mean"]), [[2, 4], [2, Math.fround(2 / 3)]]);
  assert.deepEqual(raw(["cls"]), [[1, 2], [-1, 0]]);
  assert.deepEqual(raw(["max"]), [[3, 6], [5, 4]]);
  assert.deepEqual(raw(["lasttoken"]), [[3, 6], [5, -2]]);
  const sqrt = raw(["mean_sqrt_len"]);
  assert.ok(Math.abs(sqrt[0][0] - 4 / Math.SQRT2) < 1e-6);
  // weights 1, 2 (, 3): row 0 -> (1*1 + 3*2) / 3, (2*1 + 6*2) / 3
  const w = raw(["weightedmean"]);
  assert.ok(Math.abs(w[0][0] - 7 / 3) < 1e-6 && Math.abs(w[0][1] - 14 / 3) < 1e-6);
  // Several modes concatenate in sentence-transformers' order.
  assert.deepEqual(raw(["cls", "mean"]), [[1, 2, 2, 4], [-1, 0, 2, Math.fround(2 / 3)]]);
});

Deno.test("pooling: normalize gives unit vectors; truncation re-normalizes without touching the input", () => {
  const [v] = pool(states, 2, 3, 2, lengths, DEFAULT_POOLING);
  assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-6);
  const long = normalizeInPlace(new Float32Array([3, 4, 12]));
  const short = truncateAndNormalize(long, 2);
  assert.deepEqual([...short].map((x) => +x.toFixed(6)), [0.6, 0.8]);
  assert.equal(long.length, 3);
  assert.deepEqual([...normalizeInPlace(new Float32Array(3))], [0, 0, 0]);
});

Deno.test("pooling: read from sentence-transformers modules and Pooling config", () => {
  const modules = [
    { idx: 0, path: "", type: "sentence_transformers.models.Transformer" },
    { idx: 1, path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
    { idx: 2, path: "2_Normalize", type: "sentence_transformers.models.Normalize" },
  ];
  const cls = poolingFromModules(modules, (f) => {
    assert.equal(f, "1_Pooling");
    return { pooling_mode_cls_token: true, pooling_mode_mean_tokens: false };
  });
  assert.deepEqual(cls.modes, ["cls"]);
  assert.equal(cls.normalize, true);
  const noNorm = poolingFromModules(modules.slice(0, 2), () => ({ pooling_mode_max_tokens: true }));
  assert.deepEqual(noNorm.modes, ["max"]);
  assert.equal(noNorm.normalize, false);
  assert.deepEqual(poolingModes({ pooling_mode: "lasttoken" }), ["lasttoken"]);
  assert.throws(() => poolingModes({ pooling_mode_mean_tokens: false }), UnsupportedPooling);
  assert.throws(
    () =>
      poolingFromModules([...modules, {
        idx: 3,
        path: "3_Dense",
        type: "sentence_transformers.models.Dense",
      }], () => ({ pooling_mode_mean_tokens: true })),
    /Dense is not supported/,
  );
  assert.throws(() => poolingFromModules(modules, () => undefined), /config.json is missing/);
});
