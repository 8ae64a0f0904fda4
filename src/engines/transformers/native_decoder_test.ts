// Tests the native decoder on the generated chat-tiny layouts: a GroupQueryAttention graph opens and decodes
// with its cache in place exactly as onnxruntime-node's concat-and-copy path does (same logits, token by
// token, across a buffer's growth, steps into the caller's logits buffer); a shared cache is copied before a
// write; a graph that concatenates its cache (decomposed attention) is refused at open, as is a model file that
// isn't ONNX.
import assert from "node:assert/strict";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { MODELS_DIR } from "../../../tests/helpers.ts";
import { graphHasOp, halfToFloat, NativeDecoder } from "./native_decoder.ts";
import { openOrt } from "./ort_ffi.ts";

const GQA = join(MODELS_DIR, "generated/chat-tiny-gqa-packed/onnx/model_q4.onnx");
const DECOMPOSED = join(MODELS_DIR, "generated/chat-tiny/onnx/model.onnx");
const OPTS = { threads: 1, config: {}, maxLength: 2048 };

Deno.test("native decoder: the C API opens beside onnxruntime-node", () => {
  assert.ok(openOrt(), "libonnxruntime should open through Deno.dlopen");
});

Deno.test("native decoder: graphHasOp finds fused operators only where they are", async () => {
  assert.equal(await graphHasOp(GQA, "GroupQueryAttention"), true);
  assert.equal(await graphHasOp(DECOMPOSED, "GroupQueryAttention"), false);
});

Deno.test("native decoder: in-place cache gives onnxruntime-node's logits, through growth and copies", async () => {
  const native = await NativeDecoder.open(GQA, OPTS);
  const session = await ort.InferenceSession.create(GQA, { intraOpNumThreads: 1 });
  try {
    // The reference: onnxruntime-node, cache concatenated by the graph and copied out every run.
    const names = session.inputNames.filter((n) => n.startsWith("past_key_values."));
    let cache: Record<string, ort.Tensor> = {};
    const meta = session.inputMetadata.find((m) => m.name === names[0]) as unknown as { shape: number[] };
    for (const n of names) {
      cache[n] = new ort.Tensor("float32", new Float32Array(0), [1, meta.shape[1], 0, meta.shape[3]]);
    }
    let past = 0;
    const reference = async (ids: number[]) => {
      const n = ids.length;
      const out = await session.run({
        input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, n]),
        attention_mask: new ort.Tensor("int64", new BigInt64Array(past + n).fill(1n), [1, past + n]),
        position_ids: new ort.Tensor("int64", BigInt64Array.from(ids, (_, i) => BigInt(past + i)), [1, n]),
        num_logits_to_keep: new ort.Tensor("int64", BigInt64Array.of(1n), []),
        ...cache,
      });
      cache = {};
      for (const n of names) cache[n] = out[n.replace("past_key_values", "present")];
      past += n;
      const logits = out.logits.data as Float32Array;
      return logits.subarray(logits.length - native.vocabSize);
    };
    const argmax = (x: Float32Array) => x.reduce((b, v, i) => (v > x[b] ? i : b), 0);
    const prompt = Array.from({ length: 40 }, (_, i) => 5 + (i * 3) % 50);
    let { row, kv } = await native.run(null, 0, prompt, 0, true);
    assert.deepEqual(row, await reference(prompt));
    const start = kv;
    // 300 steps: the 256-position buffer grows once (a copy of the valid positions), logits unchanged. The
    // steps write their logits into one caller buffer (no array per token).
    let token = argmax(row);
    const into = new Float32Array(native.vocabSize);
    for (let i = 0; i < 300; i++) {
      ({ row, kv } = await native.run(kv, prompt.length + i, [token], 0, true, into));
      assert.equal(row, into, "a step's logits should land in the caller's buffer");
      assert.deepEqual(row, await reference([token]), `step ${i}`);
      token = argmax(row);
    }
    assert.notEqual(kv, start, "the cache should have grown into a new buffer");
    assert.ok(kv.capacity >= prompt.length + 300);
    native.release(start);
    // Not exclusive: the run writes into a copy and leaves the shared cache as it was.
    const before = kv.buffers.map((b) => b.slice());
    const forked = await native.run(kv, prompt.length + 300, [token], 0, false);
    assert.notEqual(forked.kv, kv);
    assert.deepEqual(kv.buffers, before);
    assert.deepEqual(forked.row, await reference([token]));
    native.release(forked.kv);
    native.release(kv);
  } finally {
    await native.dispose();
    await session.release();
  }
});

Deno.test("native decoder: a graph that concatenates its cache, or no model at all, is refused at open", async () => {
  await assert.rejects(NativeDecoder.open(DECOMPOSED, OPTS));
  const bogus = await Deno.makeTempFile({ suffix: ".onnx" });
  try {
    await Deno.writeTextFile(bogus, "not a model");
    await assert.rejects(NativeDecoder.open(bogus, OPTS));
  } finally {
    await Deno.remove(bogus);
  }
});

Deno.test("native decoder: float16 logits widen exactly", () => {
  assert.equal(halfToFloat(0x3c00), 1);
  assert.equal(halfToFloat(0xc000), -2);
  assert.equal(halfToFloat(0x7bff), 65504);
  assert.equal(halfToFloat(0x0001), 2 ** -24);
  assert.equal(halfToFloat(0xfc00), -Infinity);
  assert.ok(Number.isNaN(halfToFloat(0x7e00)));
});
