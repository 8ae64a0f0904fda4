// Unit tests of the embeddings endpoint over the real app pipeline with a fake engine: per-request checks
// before batching, batching across requests, response encoding, failure isolation.
import assert from "node:assert/strict";
import { createApp } from "../app.ts";
import { parseConfig } from "../config.ts";
import { parseManifest } from "../engines/manifest.ts";
import { Registry } from "../engines/registry.ts";
import type { EmbeddingEngine, ModelEntry } from "../engines/types.ts";
import { memoryLogger } from "../log.ts";
import { toBase64 } from "./embeddings.ts";

const DIMS = 4;

/** Token ids: [1, one id per whitespace-separated word (its length + 10), 2]. Vectors: [sum, count, first, 1], not normalized. */
class FakeEngine implements EmbeddingEngine {
  readonly backend = "fake";
  readonly dimensions = DIMS;
  readonly maxTokens = 6;
  readonly vocabSize = 100;
  readonly normalized = false;
  calls: number[][][] = [];
  longestTokenized = 0;
  constructor(readonly entry: ModelEntry) {}
  tokenize(texts: string[]): Promise<number[][]> {
    return Promise.resolve(texts.map((text) => {
      this.longestTokenized = Math.max(this.longestTokenized, text.length);
      return [1, ...text.split(/\s+/).filter(Boolean).map((w) => w.length + 10), 2];
    }));
  }
  async embedBatch(inputs: readonly (readonly number[])[]): Promise<Float32Array[]> {
    this.calls.push(inputs.map((r) => [...r]));
    await new Promise((r) => setTimeout(r, 5));
    if (inputs.some((r) => r.includes(99))) throw new Error("the fake model chokes on 99");
    return inputs.map((r) => new Float32Array([r.reduce((a, b) => a + b), r.length, r[1], 1]));
  }
  dispose(): Promise<void> {
    return Promise.resolve();
  }
}

function setup(flags: string[] = []) {
  const config = parseConfig(["--embed-batch-window-ms=20", ...flags], {}, "/").config!;
  const log = memoryLogger();
  let engine: FakeEngine | undefined;
  const manifest = parseManifest(
    {
      defaults: { embedding: "fake" },
      aliases: { "text-embedding-3-small": "@embedding" },
      models: { fake: { task: "embedding", path: "fake" } },
    },
    "/m",
    "cpu",
  );
  const registry = new Registry(
    manifest,
    { transformers: { embedding: (entry) => Promise.resolve(engine = new FakeEngine(entry)) } },
    { modelsDir: "/m", threads: 1, allowRemote: false, log },
    { loadWaitMs: 1000, queueSize: config.queueSize },
  );
  const handler = createApp({ config, registry, log });
  const post = async (body: unknown) => {
    const res = await handler(
      new Request("http://x/v1/embeddings", {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      }),
    );
    return { status: res.status, json: await res.json() };
  };
  return { post, registry, engine: () => engine! };
}

Deno.test("embeddings api: bad requests are refused before batching; good ones share a call", async () => {
  const { post, engine, registry } = setup();
  await post({ model: "fake", input: "warm" });
  engine().calls.length = 0;
  const [good1, tooLong, good2, badId] = await Promise.all([
    post({ model: "fake", input: "a bb" }),
    post({ model: "fake", input: ["ok", "one two three four five"] }),
    post({ model: "fake", input: ["ccc", "dddd"] }),
    post({ model: "fake", input: [[1, 100]] }),
  ]);
  assert.equal(good1.status, 200);
  assert.equal(good2.status, 200);
  assert.equal(tooLong.status, 400);
  assert.equal(tooLong.json.error.param, "input[1]");
  assert.equal(tooLong.json.error.code, "context_length_exceeded");
  assert.equal(badId.status, 400);
  assert.equal(badId.json.error.param, "input[0][1]");
  assert.equal(engine().calls.length, 1, "the good requests ran as one call");
  assert.equal(engine().calls[0].length, 3);
  assert.deepEqual(good2.json.data.map((d: { embedding: number[] }) => d.embedding[2]), [13, 14]);
  assert.deepEqual(good1.json.usage, { prompt_tokens: 4, total_tokens: 4 });
  const [{ stats }] = registry.admission.batches();
  assert.equal(stats.requests, 3);
  assert.equal(stats.maxInputs, 3);
});

Deno.test("embeddings api: a huge text is refused from a prefix, never tokenized whole", async () => {
  const { post, engine } = setup();
  await post({ model: "fake", input: "warm" });
  const huge = "word ".repeat(200_000);
  const res = await post({ model: "fake", input: ["ok", huge] });
  assert.equal(res.status, 400);
  assert.equal(res.json.error.param, "input[1]");
  assert.match(res.json.error.message, /more than \d+ tokens/);
  assert.ok(engine().longestTokenized < 1000, `tokenized ${engine().longestTokenized} characters`);
  // A long but whitespace-padded text within the limit is still measured exactly and accepted.
  const padded = await post({ model: "fake", input: `a${" ".repeat(5000)}b` });
  assert.equal(padded.status, 200);
  assert.equal(padded.json.usage.prompt_tokens, 4);
});

Deno.test("embeddings api: response shape, base64 bytes, dimensions", async () => {
  const { post } = setup();
  const float = await post({ model: "text-embedding-3-small", input: ["x", "yy"], user: "u" });
  assert.equal(float.status, 200);
  assert.equal(float.json.object, "list");
  assert.equal(float.json.model, "text-embedding-3-small");
  assert.deepEqual(float.json.data[1], { object: "embedding", index: 1, embedding: [15, 3, 12, 1] });

  const b64 = await post({ model: "fake", input: "yy", encoding_format: "base64" });
  const bytes = Uint8Array.from(atob(b64.json.data[0].embedding), (c) => c.charCodeAt(0));
  const view = new DataView(bytes.buffer);
  assert.deepEqual([0, 1, 2, 3].map((k) => view.getFloat32(k * 4, true)), [15, 3, 12, 1]);

  const dims = await post({ model: "fake", input: "yy", dimensions: 2 });
  const v = dims.json.data[0].embedding;
  assert.equal(v.length, 2);
  assert.ok(Math.abs(v[0] - 15 / Math.hypot(15, 3)) < 1e-6);
  const over = await post({ model: "fake", input: "yy", dimensions: DIMS + 1 });
  assert.equal(over.status, 400);
  assert.equal(over.json.error.param, "dimensions");
  const single = await post({ model: "fake", input: [1, 200] });
  assert.equal(single.json.error.param, "input[1]");
});

Deno.test("embeddings api: a request that breaks the model call fails alone", async () => {
  const { post } = setup();
  const [ok, broken] = await Promise.all([
    post({ model: "fake", input: "fine" }),
    post({ model: "fake", input: [[1, 99, 2]] }),
  ]);
  assert.equal(ok.status, 200);
  assert.equal(broken.status, 500);
  assert.equal(broken.json.error.type, "server_error");
});

Deno.test("toBase64: little-endian float32 bytes", () => {
  const v = new Float32Array([1, -2.5, 0.1]);
  const bytes = Uint8Array.from(atob(toBase64(v)), (c) => c.charCodeAt(0));
  const view = new DataView(bytes.buffer);
  assert.deepEqual([0, 1, 2].map((i) => view.getFloat32(i * 4, true)), [...v]);
  // A view into a larger buffer encodes only its own bytes.
  assert.equal(toBase64(new Float32Array([9, 1, -2.5, 0.1]).subarray(1)), toBase64(v));
});
