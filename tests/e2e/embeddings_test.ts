// End to end: POST /v1/embeddings on the real server with the generated embed-tiny model, through the official
// `openai` client (and raw fetch for malformed bodies).
import assert from "node:assert/strict";
import { join } from "node:path";
import OpenAI from "openai";
import {
  errorOf,
  GENERATED_MODELS,
  MODELS_DIR,
  postRaw,
  startTestServer,
  type TestServer,
} from "../helpers.ts";
import { transformersRuntime } from "../../src/engines/transformers/runtime.ts";
import { memoryLogger } from "../../src/log.ts";

const MODEL = "embed-tiny";
const DIMS = 32;
const MAX_TOKENS = 128;
const VOCAB = 2200;

const SENTENCES = [
  "The quick brown fox jumps over the lazy dog.",
  "A journey of a thousand miles begins with a single step.",
  "hello",
  "Vectors that are close mean texts that are alike.",
  "Rain in the morning, sun in the afternoon and wind at night.",
  "one two three four five six seven eight nine ten",
];

/** The model's own tokenizer, loaded independently of the server, for expected token counts and ids. */
async function tokenizer() {
  const { tf } = await transformersRuntime("cpu", memoryLogger());
  return await tf.AutoTokenizer.from_pretrained(join(MODELS_DIR, "generated", MODEL), {
    local_files_only: true,
  });
}

const norm = (v: number[]) => Math.hypot(...v);
function maxDiff(a: number[], b: number[]): number {
  assert.equal(a.length, b.length);
  return Math.max(...a.map((x, i) => Math.abs(x - b[i])));
}

async function floats(s: TestServer, input: string | string[] | number[] | number[][], extra = {}) {
  const res = await s.client.embeddings.create({ model: MODEL, input, encoding_format: "float", ...extra });
  return res;
}

async function badRequest(s: TestServer, body: unknown): Promise<{ param: string | null; message: string }> {
  const res = await postRaw(`${s.url}/v1/embeddings`, JSON.stringify(body));
  assert.equal(
    res.status,
    400,
    `${JSON.stringify(body).slice(0, 100)} -> ${res.status} ${JSON.stringify(res.json)}`,
  );
  const err = errorOf(res.json);
  assert.equal(err.type, "invalid_request_error");
  return err;
}

Deno.test("embeddings e2e", async (t) => {
  const s = await startTestServer();
  const tok = await tokenizer();
  try {
    await t.step("every input form; usage equals the tokenizer's counts; ids equal their text", async () => {
      const one = await floats(s, SENTENCES[0]);
      assert.equal(one.object, "list");
      assert.equal(one.model, MODEL);
      assert.equal(one.data.length, 1);
      assert.equal(one.data[0].object, "embedding");
      assert.equal(one.data[0].index, 0);
      assert.equal(one.data[0].embedding.length, DIMS);
      const ids0 = tok.encode(SENTENCES[0]);
      assert.deepEqual(one.usage, { prompt_tokens: ids0.length, total_tokens: ids0.length });

      const many = await floats(s, SENTENCES);
      const counts = SENTENCES.map((x) => tok.encode(x).length);
      assert.equal(many.usage.prompt_tokens, counts.reduce((a, b) => a + b));
      assert.equal(many.usage.total_tokens, many.usage.prompt_tokens);

      const fromIds = await floats(s, ids0);
      assert.equal(fromIds.data.length, 1);
      assert.equal(fromIds.usage.prompt_tokens, ids0.length);
      assert.ok(maxDiff(fromIds.data[0].embedding, one.data[0].embedding) < 1e-6);

      const idLists = SENTENCES.map((x) => tok.encode(x));
      const fromIdLists = await floats(s, idLists);
      assert.equal(fromIdLists.usage.prompt_tokens, many.usage.prompt_tokens);
      fromIdLists.data.forEach((d, i) => assert.ok(maxDiff(d.embedding, many.data[i].embedding) < 1e-5));
    });

    await t.step("base64 (the SDK's default) equals float output within float32 precision", async () => {
      const f = await floats(s, SENTENCES);
      const b = await s.client.embeddings.create({ model: MODEL, input: SENTENCES }); // SDK asks for base64
      b.data.forEach((d, i) => {
        assert.ok(Array.isArray(d.embedding), "the SDK decoded base64 into numbers");
        assert.equal(d.embedding.length, DIMS);
        for (let k = 0; k < DIMS; k++) assert.equal(d.embedding[k], Math.fround(f.data[i].embedding[k]));
      });
      // On the wire it really is base64 of little-endian float32.
      const raw = await postRaw(
        `${s.url}/v1/embeddings`,
        JSON.stringify({ model: MODEL, input: SENTENCES[1], encoding_format: "base64" }),
      );
      const text = (raw.json.data as { embedding: string }[])[0].embedding;
      assert.equal(typeof text, "string");
      const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
      assert.equal(bytes.length, DIMS * 4);
      const view = new DataView(bytes.buffer);
      for (let k = 0; k < DIMS; k++) assert.equal(view.getFloat32(k * 4, true), f.data[1].embedding[k]);
    });

    await t.step("dimensions gives unit vectors of that length, a re-normalized prefix", async () => {
      const full = (await floats(s, SENTENCES[3])).data[0].embedding;
      for (const dimensions of [1, 8, DIMS]) {
        const out = await floats(s, SENTENCES[3], { dimensions });
        const v = out.data[0].embedding;
        assert.equal(v.length, dimensions);
        assert.ok(Math.abs(norm(v) - 1) < 1e-5);
        const prefix = full.slice(0, dimensions);
        assert.ok(maxDiff(v, prefix.map((x) => x / norm(prefix))) < 1e-5);
      }
      const viaSdk = await s.client.embeddings.create({ model: MODEL, input: ["a b", "c d"], dimensions: 5 });
      viaSdk.data.forEach((d) => assert.equal(d.embedding.length, 5));
    });

    await t.step("batch order; identical texts identical vectors, different texts different", async () => {
      const shuffled = [SENTENCES[4], SENTENCES[0], SENTENCES[4], SENTENCES[2], SENTENCES[5]];
      const out = await floats(s, shuffled);
      assert.deepEqual(out.data.map((d) => d.index), [0, 1, 2, 3, 4]);
      for (let i = 0; i < shuffled.length; i++) {
        const alone = (await floats(s, shuffled[i])).data[0].embedding;
        assert.ok(maxDiff(out.data[i].embedding, alone) < 1e-5, `item ${i} matches its own request`);
      }
      assert.deepEqual(out.data[0].embedding, out.data[2].embedding);
      const again = (await floats(s, SENTENCES[4])).data[0].embedding;
      assert.deepEqual(again, (await floats(s, SENTENCES[4])).data[0].embedding);
      for (let i = 0; i < out.data.length; i++) {
        for (let j = 0; j < out.data.length; j++) {
          if (shuffled[i] !== shuffled[j]) {
            assert.ok(maxDiff(out.data[i].embedding, out.data[j].embedding) > 1e-3);
          }
        }
      }
    });

    await t.step("alias text-embedding-3-small answers under its own name", async () => {
      const out = await s.client.embeddings.create({ model: "text-embedding-3-small", input: "hi there" });
      assert.equal(out.model, "text-embedding-3-small");
      assert.equal(out.data[0].embedding.length, DIMS);
      const rec = s.records.findLast((r) => r.path === "/v1/embeddings");
      assert.equal(rec?.model, MODEL);
      assert.equal(rec?.promptTokens, tok.encode("hi there").length);
    });

    await t.step("every bad input is a 400 naming its parameter", async () => {
      const long = Array(MAX_TOKENS + 10).fill("word").join(" ");
      const cases: [unknown, string][] = [
        [{ model: MODEL, input: "" }, "input"],
        [{ model: MODEL, input: [] }, "input"],
        [{ model: MODEL, input: ["ok", "fine", "good", ""] }, "input[3]"],
        [{ model: MODEL, input: ["ok", 5] }, "input[1]"],
        [{ model: MODEL, input: [[2, 3], []] }, "input[1]"],
        [{ model: MODEL, input: [[2, 3], [4, -1]] }, "input[1][1]"],
        [{ model: MODEL, input: [2, 3.5] }, "input[1]"],
        [{ model: MODEL, input: [[2, 3], [4, VOCAB]] }, "input[1][1]"],
        [{ model: MODEL, input: [2, VOCAB + 7] }, "input[1]"],
        [{ model: MODEL, input: ["short", long] }, "input[1]"],
        [{ model: MODEL, input: long }, "input"],
        [{ model: MODEL, input: [Array(MAX_TOKENS + 1).fill(5)] }, "input[0]"],
        [{ model: MODEL, input: Array(2049).fill("a") }, "input"],
        [{ model: MODEL, input: { text: "x" } }, "input"],
        [{ model: MODEL }, "input"],
        [{ input: "x" }, "model"],
        [{ model: MODEL, input: "x", dimensions: 0 }, "dimensions"],
        [{ model: MODEL, input: "x", dimensions: DIMS + 1 }, "dimensions"],
        [{ model: MODEL, input: "x", dimensions: "8" }, "dimensions"],
        [{ model: MODEL, input: "x", dimensions: 2.5 }, "dimensions"],
        [{ model: MODEL, input: "x", encoding_format: "int8" }, "encoding_format"],
        [{ model: MODEL, input: "x", user: 1 }, "user"],
        [{ model: MODEL, input: "x", truncate: true }, "truncate"],
      ];
      for (const [body, param] of cases) {
        const err = await badRequest(s, body);
        assert.equal(err.param, param, `${JSON.stringify(body).slice(0, 100)}: ${err.message}`);
      }
      const tooLong = await badRequest(s, { model: MODEL, input: ["short", long] });
      assert.match(tooLong.message, new RegExp(`at most ${MAX_TOKENS} tokens`));

      // The SDK surfaces the same errors.
      await assert.rejects(
        s.client.embeddings.create({ model: MODEL, input: ["fine", ""] }),
        (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === "input[1]",
      );
      const unknown = await postRaw(`${s.url}/v1/embeddings`, JSON.stringify({ model: "nope", input: "x" }));
      assert.equal(unknown.status, 404);
      assert.equal(errorOf(unknown.json).param, "model");
      const notJson = await postRaw(`${s.url}/v1/embeddings`, "{input:");
      assert.equal(notJson.status, 400);
      const array = await postRaw(`${s.url}/v1/embeddings`, "[1,2]");
      assert.equal(array.status, 400);
      // The server still answers after all of that.
      assert.equal((await floats(s, "still here")).data.length, 1);
    });
  } finally {
    await s.close();
  }
});

Deno.test("embeddings e2e: concurrent requests are batched and each gets its own vectors", async () => {
  const s = await startTestServer({ flags: ["--embed-batch-window-ms=25"] });
  try {
    const texts = Array.from({ length: 16 }, (_, i) => `${SENTENCES[i % SENTENCES.length]} number ${i}`);
    const alone: number[][] = [];
    for (const text of texts) alone.push((await floats(s, text)).data[0].embedding);
    const before = s.server.registry.admission.batches().find((x) => x.model === MODEL)!.stats;

    const together = await Promise.all(texts.map((text) => floats(s, text)));

    const after = s.server.registry.admission.batches().find((x) => x.model === MODEL)!.stats;
    assert.equal(after.requests - before.requests, texts.length);
    assert.equal(after.inputs - before.inputs, texts.length);
    assert.ok(
      after.batches - before.batches < texts.length,
      `batched: ${after.batches - before.batches} calls`,
    );
    assert.ok(after.maxInputs > 1);
    together.forEach((res, i) => {
      assert.equal(res.data.length, 1);
      assert.ok(maxDiff(res.data[0].embedding, alone[i]) < 1e-5, `request ${i} got its own vector`);
    });
  } finally {
    await s.close();
  }
});

Deno.test("embeddings e2e: a full queue is 429 with Retry-After; a gone client's request is dropped", async () => {
  const s = await startTestServer({ flags: ["--embed-batch-window-ms=400", "--queue-size=1"] });
  try {
    await floats(s, "load the model first");
    const url = `${s.url}/v1/embeddings`;
    const body = JSON.stringify({ model: MODEL, input: "waits in the window" });
    const stats = () => s.server.registry.admission.batches().find((x) => x.model === MODEL)!.stats;
    const waiting = async () => {
      while (stats().waiting === 0) await new Promise((r) => setTimeout(r, 5));
    };

    const first = postRaw(url, body);
    await waiting(); // the first request sits in the batch window, filling the queue of 1
    const second = await postRaw(url, body);
    assert.equal(second.status, 429);
    assert.ok(Number(second.headers.get("retry-after")) >= 1);
    assert.equal(errorOf(second.json).type, "rate_limit_error");
    assert.equal((await first).status, 200);

    const before = stats();
    const gone = new AbortController();
    const abandoned = fetch(url, {
      method: "POST",
      body,
      signal: gone.signal,
      headers: { "content-type": "application/json" },
    });
    await waiting();
    gone.abort();
    await assert.rejects(abandoned);
    while (stats().waiting > 0) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 450)); // past the window: nothing may run for it
    const after = stats();
    assert.equal(after.dropped - before.dropped, 1);
    assert.equal(after.batches, before.batches, "nothing ran for the dropped request");
  } finally {
    await s.close();
  }
});

/** The generated models plus `id`: embed-tiny's folder, fp32, loading onnx/<fileName>.onnx. */
function withEmbedTinyFile(id: string, fileName: string) {
  const entry = {
    task: "embedding" as const,
    path: "generated/embed-tiny",
    dtype: "fp32",
    device: "cpu" as const,
    options: { model_file_name: fileName },
  };
  return { ...GENERATED_MODELS, models: { ...GENERATED_MODELS.models, [id]: entry } };
}

Deno.test("embeddings e2e: the fused encoder layout (model_O2.onnx) gives the decomposed graph's vectors", async () => {
  // The same weights with onnxruntime's fused BERT operators (EmbedLayerNormalization, Attention with the raw
  // padding mask, SkipLayerNormalization, BiasGelu), chosen by the manifest's model_file_name as for a
  // sentence-transformers repo that ships onnx/model_O2.onnx.
  const s = await startTestServer({ manifest: withEmbedTinyFile("embed-fused", "model_O2") });
  try {
    // Lengths from 1 to 30 tokens in one batch: padding everywhere but in the longest row.
    const texts = [...SENTENCES, "x", SENTENCES.join(" ").slice(0, 120)];
    const ids = [[5, 17, 300, 2], [40]];
    for (const input of [texts, ids] as (string[] | number[][])[]) {
      const ref = await s.client.embeddings.create({ model: MODEL, input, encoding_format: "float" });
      const fused = await s.client.embeddings.create({
        model: "embed-fused",
        input,
        encoding_format: "float",
      });
      assert.deepEqual(fused.usage, ref.usage);
      assert.equal(fused.data.length, input.length);
      fused.data.forEach((d, i) => {
        assert.ok(maxDiff(d.embedding, ref.data[i].embedding) < 1e-5, `input ${i}`);
        assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5);
      });
    }
    const loaded = s.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "model loaded");
    assert.match(loaded.find((l) => l.model === "embed-fused").backend, /fp32 \(model_O2\)$/);
    assert.doesNotMatch(loaded.find((l) => l.model === MODEL).backend, /model_O2/);
  } finally {
    await s.close();
  }
});

Deno.test("embeddings e2e: a model_file_name with no such file is a 503 naming the file", async () => {
  const s = await startTestServer({ manifest: withEmbedTinyFile("embed-missing", "model_O9") });
  try {
    const res = await postRaw(
      `${s.url}/v1/embeddings`,
      JSON.stringify({ model: "embed-missing", input: "x" }),
    );
    assert.equal(res.status, 503);
    assert.match(errorOf(res.json).message, /onnx\/model_O9\.onnx/);
    assert.equal((await floats(s, "still here")).data.length, 1);
  } finally {
    await s.close();
  }
});
