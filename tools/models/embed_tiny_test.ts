// Tests that transformers.js' feature-extraction pipeline loads embed-tiny and gives stable, distinct,
// correctly sized sentence vectors (mean pooling + normalize, as its sentence-transformers files say).
import assert from "node:assert/strict";
import { env, pipeline, type Tensor } from "@huggingface/transformers";
import { ensureModels, GENERATED_DIR } from "../ensure_models.ts";

env.allowRemoteModels = false;
env.localModelPath = GENERATED_DIR;

await ensureModels({ only: ["embed-tiny"] });
const config = JSON.parse(await Deno.readTextFile(`${GENERATED_DIR}embed-tiny/config.json`));
const pooling = JSON.parse(await Deno.readTextFile(`${GENERATED_DIR}embed-tiny/1_Pooling/config.json`));

function rows(t: Tensor): number[][] {
  const [n, d] = t.dims;
  return Array.from(
    { length: n },
    (_, i) => Array.from((t.data as Float32Array).subarray(i * d, (i + 1) * d)),
  );
}

for (const dtype of ["fp32", "q8"] as const) {
  Deno.test(`embed-tiny ${dtype}: vectors have the configured size, differ between texts, and are stable`, async () => {
    const extract = await pipeline("feature-extraction", "embed-tiny", { dtype });
    const texts = ["hello world", "The quick brown fox jumps over the lazy dog.", "hello world"];
    const a = rows(await extract(texts, { pooling: "mean", normalize: true }));
    const b = rows(await extract(texts, { pooling: "mean", normalize: true }));
    assert.equal(a[0].length, config.hidden_size);
    assert.equal(pooling.word_embedding_dimension, config.hidden_size);
    assert.deepEqual(a, b);
    assert.deepEqual(a[0], a[2]);
    const dot = a[0].reduce((s, x, i) => s + x * a[1][i], 0);
    assert.ok(dot < 0.99, `different texts too similar: ${dot}`);
    for (const v of a) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5);
    // Padding must not change a vector: a batch entry equals the same text embedded alone (q8 quantizes
    // activations per tensor, so the padded batch's range shifts its values a little).
    const [alone] = rows(await extract(["hello world"], { pooling: "mean", normalize: true }));
    const tolerance = dtype === "fp32" ? 1e-5 : 0.05;
    alone.forEach((x, i) => assert.ok(Math.abs(x - a[0][i]) < tolerance, `${x} vs ${a[0][i]}`));
  });
}

Deno.test("embed-tiny: the tokenizer covers ordinary text without [UNK]", async () => {
  const extract = await pipeline("feature-extraction", "embed-tiny");
  const ids = extract.tokenizer.encode("Zebras quickly jumped; naïve café, 42 items!") as number[];
  const unk = extract.tokenizer.convert_tokens_to_ids("[UNK]");
  assert.equal(ids.includes(unk as number), false);
});
