// End to end: chat on llama.cpp with the GGUF export of chat-tiny (same weights, tokenizer and template as the
// ONNX model), through the official `openai` client. The ONNX path is tested exactly elsewhere
// (chat_test.ts, tools_test.ts, structured_output_test.ts); here every feature is asked of both models in one
// server and the GGUF answers must be identical: text, tool calls, JSON, logprobs, n with a seed, stop
// sequences, usage. Then what only this backend does: the prompt cache (exact cached_tokens, same reply as
// uncached), 8 concurrent streams decoded together, a corrupt GGUF failing alone, and chat (GGUF), embeddings
// and transcription (whisper.cpp, its own ggml) in one process; and where the weights live (huge_pages.ts).
import { CHAT_FEATURES, HI } from "../support/chat_features.ts";
import { assertStreamsTogether, STREAM_PROMPTS } from "../support/concurrent_streams.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { toFile } from "openai";
import { GENERATED_MODELS, MODELS_DIR, REPO_ROOT, startTestServer, type TestServer } from "../helpers.ts";
import type { ManifestJson } from "../../src/engines/manifest.ts";
import type { WorkerChatEngine } from "../../src/workers/host.ts";
import { hugePagesOn } from "../../src/engines/llama/huge_pages.ts";
import { openLlama } from "../../src/engines/llama/ffi.ts";

const HELLO = "Hello from chat-tiny!";
const SMOL_FILE = "smollm2-135m-Q8_0.gguf";
const SMOL_Q8 = `generated/bench/smollm2-135m-instruct/gguf/${SMOL_FILE}`;

async function withServer(
  extra: ManifestJson["models"],
  fn: (t: TestServer) => Promise<void>,
  flags: string[] = [],
) {
  const manifest = { ...GENERATED_MODELS, models: { ...GENERATED_MODELS.models, ...extra } };
  const t = await startTestServer({ manifest, flags });
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

const GGUF = {
  "chat-gguf": {
    task: "chat" as const,
    path: "generated/chat-tiny/gguf/chat-tiny-F32.gguf",
    device: "cpu" as const,
  },
  "chat-gguf-q8": {
    task: "chat" as const,
    path: "generated/chat-tiny/gguf/chat-tiny-Q8_0.gguf",
    device: "cpu" as const,
  },
};

/** What must match between the two backends: everything but ids and timestamps. */
function comparable(r: { choices: unknown[]; usage?: unknown }) {
  return { choices: r.choices, usage: r.usage };
}

Deno.test("gguf chat: every feature answers exactly as the ONNX export of the same model", async (t) => {
  await withServer(GGUF, async (s) => {
    const bodies: Record<string, Record<string, unknown>> = {
      ...CHAT_FEATURES,
      "max_tokens": { messages: HI, max_tokens: 3 },
      "system prompt and history": {
        messages: [
          { role: "system", content: "Be brief." },
          ...HI,
          { role: "assistant", content: HELLO },
          { role: "user", content: "Count forever" },
        ],
        max_tokens: 12,
      },
    };
    for (const [name, body] of Object.entries(bodies)) {
      await t.step(name, async () => {
        const onnx = await s.client.chat.completions.create({ model: "chat-tiny", ...body } as never);
        const gguf = await s.client.chat.completions.create({ model: "chat-gguf", ...body } as never);
        const a = comparable(onnx as never);
        const b = comparable(gguf as never);
        // Tool call ids are random per request.
        const strip = (x: unknown) => JSON.parse(JSON.stringify(x).replace(/"call_[A-Za-z0-9]+"/g, '"call"'));
        // cached_tokens differ by design (the GGUF model reuses earlier prompts); compared separately below.
        for (const u of [a.usage, b.usage] as { prompt_tokens_details?: { cached_tokens?: number } }[]) {
          if (u?.prompt_tokens_details) u.prompt_tokens_details.cached_tokens = 0;
        }
        // Logprobs agree to float precision (ggml and onnxruntime sum in different orders); all else exactly.
        const logprobs: [number, number][] = [];
        const pick = (x: unknown, into: number[]): unknown =>
          JSON.parse(JSON.stringify(x), (k, v) => k === "logprob" ? (into.push(v), 0) : v);
        const la: number[] = [];
        const lb: number[] = [];
        assert.deepEqual(pick(strip(b), lb), pick(strip(a), la));
        la.forEach((v, i) => logprobs.push([v, lb[i]]));
        for (const [x, y] of logprobs) assert.ok(Math.abs(x - y) < 1e-3, `logprob ${y} vs ${x}`);
      });
    }
    await t.step("legacy completions: raw prompt, echo with prompt logprobs, token ids", async () => {
      for (
        const body of [{ prompt: "Hello", echo: true, logprobs: 2 }, { prompt: ["Once upon a time", "Hi"] }]
      ) {
        const onnx = await s.client.completions.create({ model: "chat-tiny", ...body });
        const gguf = await s.client.completions.create({ model: "chat-gguf", ...body });
        const round = (x: unknown) =>
          JSON.parse(
            JSON.stringify(x),
            (_k, v) => typeof v === "number" && !Number.isInteger(v) ? +v.toFixed(3) : v,
          );
        assert.deepEqual(round(comparable(gguf)), round(comparable(onnx)));
      }
    });

    await t.step("the exact default reply, also at Q8_0, and streamed", async () => {
      const r = await s.client.chat.completions.create({ model: "chat-gguf-q8", messages: HI });
      assert.equal(r.choices[0].message.content, HELLO);
      const stream = await s.client.chat.completions.create({
        model: "chat-gguf",
        messages: HI,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = "";
      let usage;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        usage = chunk.usage ?? usage;
      }
      assert.equal(text, HELLO);
      assert.equal(usage?.completion_tokens, 6);
    });
  });
});

Deno.test("gguf chat: a second turn reuses the cached prefix, exactly counted, with the uncached reply", async () => {
  await withServer(GGUF, async (s) => {
    const first = [{ role: "system" as const, content: "You are terse." }, ...HI];
    const r1 = await s.client.chat.completions.create({ model: "chat-gguf", messages: first });
    assert.equal(r1.usage?.prompt_tokens_details?.cached_tokens, 0);
    const second = [...first, { role: "assistant" as const, content: HELLO }, {
      role: "user" as const,
      content: "Count forever",
    }];
    const r2 = await s.client.chat.completions.create({
      model: "chat-gguf",
      messages: second,
      max_tokens: 10,
    });
    // Exactly what the first request put in the cache: its prompt and every generated token but the last
    // (the one that ended it is sampled, never fed back); the template renders the reply as generated.
    assert.equal(
      r2.usage!.prompt_tokens_details!.cached_tokens,
      r1.usage!.prompt_tokens + r1.usage!.completion_tokens - 1,
    );
    const onnx2 = await s.client.chat.completions.create({
      model: "chat-tiny",
      messages: second,
      max_tokens: 10,
    });
    assert.equal(r2.choices[0].message.content, onnx2.choices[0].message.content);
    assert.equal(r2.usage!.prompt_tokens, onnx2.usage!.prompt_tokens);
    // The same request again: all but the last prompt token come from the cache.
    const r3 = await s.client.chat.completions.create({
      model: "chat-gguf",
      messages: second,
      max_tokens: 10,
    });
    assert.equal(r3.usage!.prompt_tokens_details!.cached_tokens, r3.usage!.prompt_tokens - 1);
    assert.equal(r3.choices[0].message.content, r2.choices[0].message.content);
  });
});

Deno.test("gguf chat: 8 concurrent streams are decoded together and each gets its exact reply", async () => {
  await withServer(GGUF, async (s) => {
    // The ONNX export answers each alone; all 8 must be admitted at once (--parallel 8 here).
    await assertStreamsTogether(s, { model: "chat-gguf", reference: "chat-tiny", count: 8 });
  }, ["--parallel=8"]);
});

Deno.test("gguf chat: 8 sampled streams read and decoded together draw what the ONNX export draws alone", async () => {
  await withServer(GGUF, async (s) => {
    // Temperature 1.3 with a seed per prompt: the prompts of the burst are read as one cohort (same prompts
    // share prefixes across KV streams), the tokens are drawn by the native sampler; the ONNX export answers
    // each alone through the JavaScript sampler. Same seed, same reply.
    await assertStreamsTogether(s, {
      model: "chat-gguf",
      reference: "chat-tiny",
      count: 8,
      temperature: 1.3,
      maxTokens: 24,
    });
    // Sampling really chose: some replies differ from the greedy ones.
    let differs = 0;
    for (const [i, p] of STREAM_PROMPTS.entries()) {
      const ask = (extra: Record<string, number>) =>
        s.client.chat.completions.create({
          model: "chat-gguf",
          messages: [{ role: "user", content: p }],
          max_tokens: 24,
          ...extra,
        }).then((r) => r.choices[0].message.content);
      if (await ask({ temperature: 1.3, seed: 100 + i }) !== await ask({ temperature: 0 })) differs++;
    }
    assert.ok(differs > 0, "every sampled reply was the greedy one");
  }, ["--parallel=8"]);
});

Deno.test("gguf: a corrupt file and an unknown architecture fail with 503 for that model only", async () => {
  const dir = await Deno.makeTempDir({ dir: join(MODELS_DIR, "generated"), prefix: "bad-gguf-" });
  try {
    const good = await Deno.readFile(join(MODELS_DIR, "generated/chat-tiny/gguf/chat-tiny-F32.gguf"));
    await Deno.writeFile(join(dir, "truncated.gguf"), good.subarray(0, good.length >> 1));
    // Same file, architecture renamed: "qwen2" -> "qwen9" in the metadata.
    const renamed = good.slice();
    const text = new TextDecoder("latin1").decode(renamed.subarray(0, 4096));
    const at = text.indexOf("qwen2");
    renamed[at + 4] = "9".charCodeAt(0);
    await Deno.writeFile(join(dir, "unknown-arch.gguf"), renamed);
    const rel = dir.slice(MODELS_DIR.length + 1);
    await withServer({
      truncated: { task: "chat", path: `${rel}/truncated.gguf`, device: "cpu" },
      "unknown-arch": { task: "chat", path: `${rel}/unknown-arch.gguf`, device: "cpu" },
      ...GGUF,
    }, async (s) => {
      for (const model of ["truncated", "unknown-arch"]) {
        const res = await fetch(`${s.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model, messages: HI }),
        });
        assert.equal(res.status, 503, model);
        const body = await res.json();
        assert.equal(body.error.code, "model_unavailable");
        assert.match(body.error.message, /corrupt, truncated, or of an architecture/);
      }
      const ok = await s.client.chat.completions.create({ model: "chat-gguf", messages: HI });
      assert.equal(ok.choices[0].message.content, HELLO);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("gguf chat, embeddings and whisper.cpp transcription in one server process", async () => {
  await withServer(GGUF, async (s) => {
    const mp3 = await Deno.readFile(join(REPO_ROOT, "tests", "fixtures", "audio", "speech.mp3"));
    const before = (await s.client.audio.transcriptions.create({
      file: await toFile(mp3, "speech.mp3", { type: "audio/mpeg" }),
      model: "whisper-tiny-test",
    })).text;
    const [chat, embed, heard] = await Promise.all([
      s.client.chat.completions.create({ model: "chat-gguf", messages: HI }),
      s.client.embeddings.create({ model: "embed-tiny", input: "the cat" }),
      s.client.audio.transcriptions.create({
        file: await toFile(mp3, "speech.mp3", { type: "audio/mpeg" }),
        model: "whisper-tiny-test",
      }),
    ]);
    assert.equal(chat.choices[0].message.content, HELLO);
    assert.equal(embed.data[0].embedding.length > 0, true);
    assert.equal(heard.text, before);
    assert.ok(heard.text.length > 0);
  });
});

Deno.test("gguf embeddings: pooled, normalized, and a batch equals its inputs one by one", async () => {
  await withServer({
    "embed-gguf": { task: "embedding", path: "generated/chat-tiny/gguf/chat-tiny-F32.gguf", device: "cpu" },
  }, async (s) => {
    const texts = ["the cat sat", "Hello there, how are you today?", "東京 🙂", "the cat sat"];
    const batch = await s.client.embeddings.create({ model: "embed-gguf", input: texts });
    assert.equal(batch.data.length, 4);
    const one = await Promise.all(
      texts.map(async (t) =>
        (await s.client.embeddings.create({ model: "embed-gguf", input: t })).data[0].embedding
      ),
    );
    for (const [i, d] of batch.data.entries()) {
      assert.equal(d.embedding.length, 128);
      const norm = Math.hypot(...d.embedding);
      assert.ok(Math.abs(norm - 1) < 1e-5, `unit length (${norm})`);
      // Sequences in one batch never see each other: each equals its own single-input run.
      for (let k = 0; k < 128; k++) {
        assert.ok(Math.abs(d.embedding[k] - one[i][k]) < 1e-5, `input ${i} dim ${k}`);
      }
    }
    assert.deepEqual(batch.data[0].embedding, batch.data[3].embedding);
    assert.notDeepEqual(batch.data[0].embedding, batch.data[1].embedding);
    assert.ok(batch.usage.prompt_tokens > 4);
  });
});

Deno.test("gguf embeddings: embed-tiny's GGUF export gives the ONNX model's tokens and vectors", async () => {
  const models = Object.fromEntries(
    ["F32", "Q8_0"].map((t) => [`embed-gguf-${t}`, {
      task: "embedding" as const,
      path: `generated/embed-tiny/gguf/embed-tiny-${t}.gguf`,
      device: "cpu" as const,
    }]),
  );
  await withServer(models, async (s) => {
    const texts = ["the cat sat on the mat", "hello world", "a quick brown fox jumps over the lazy dog"];
    const onnx = await s.client.embeddings.create({ model: "embed-tiny", input: texts });
    // [largest component difference, 1 - cosine] allowed; measured: F32 1.5e-4 and 5e-8, Q8_0 5e-3 and 7e-5.
    for (const [type, tolerance, angle] of [["F32", 5e-4, 1e-6], ["Q8_0", 1.5e-2, 5e-4]] as const) {
      const gguf = await s.client.embeddings.create({ model: `embed-gguf-${type}`, input: texts });
      // The same WordPiece tokens, [CLS] and [SEP] included.
      assert.equal(gguf.usage.prompt_tokens, onnx.usage.prompt_tokens, type);
      for (const [i, d] of gguf.data.entries()) {
        const want = onnx.data[i].embedding;
        assert.equal(d.embedding.length, want.length);
        const diff = Math.max(...d.embedding.map((x, k) => Math.abs(x - want[k])));
        const cos = d.embedding.reduce((a, x, k) => a + x * want[k], 0);
        // Not bit-equal: llama.cpp's BERT uses GELU's tanh approximation where the ONNX graph (as PyTorch)
        // uses erf, and Q8_0 adds its quantization error.
        assert.ok(diff < tolerance, `${type} input ${i}: max difference ${diff}`);
        assert.ok(1 - cos < angle, `${type} input ${i}: cosine ${cos}`);
      }
    }
  });
});

Deno.test({
  name: "gguf memory: weights the CPU computes with are read into the runner's memory, on huge pages; " +
    "options.mmap: true maps the file",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const huge = hugePagesOn(openLlama());
    // The bench's SmolLM2-135M shape (136 MiB of Q8_0 weights, which llama.cpp does not repack here), twice.
    const smol = { task: "chat" as const, path: SMOL_Q8, device: "cpu" as const };
    const models = { "gguf-read": smol, "gguf-mapped": { ...smol, options: { mmap: true } } };
    await withServer(models, async (s) => {
      const runner = async (id: string) => {
        await s.client.chat.completions.create({ model: id, messages: HI, max_tokens: 2 });
        const engine = await s.server.registry.engine<WorkerChatEngine>(
          s.server.registry.resolve(id, "chat"),
        );
        return {
          maps: Deno.readTextFileSync(`/proc/${engine.pid}/maps`),
          hugeKb: Number(
            /AnonHugePages:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${engine.pid}/smaps_rollup`))![1],
          ),
        };
      };
      const read = await runner("gguf-read");
      const mapped = await runner("gguf-mapped");
      assert.ok(mapped.maps.includes(SMOL_FILE), "options.mmap: true maps the file");
      if (huge) {
        assert.ok(!read.maps.includes(SMOL_FILE), "read in, not mapped");
        // The runner that read its weights in has them on huge pages: the two differ by them.
        const weightsKb = read.hugeKb - mapped.hugeKb;
        assert.ok(
          weightsKb > 64 * 1024,
          `AnonHugePages ${read.hugeKb} kB read in, ${mapped.hugeKb} kB mapped`,
        );
      } else {
        assert.ok(read.maps.includes(SMOL_FILE), "no huge pages on this host: mapped");
      }
    });
  },
});
