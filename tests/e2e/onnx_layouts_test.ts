// End to end: every ONNX layout real repos ship, each generated from chat-tiny's crafted weights, served by one
// server and asked the same questions through the official `openai` client: each must give chat-tiny's exact
// replies (plain text, a tool call, a long streamed reply) and the same usage as the fp32 reference. Layouts:
// model_{fp16,int8,bnb4,q4f16}.onnx beside fp32/q8/q4 (decomposed attention as optimum exports it), the fused
// operators of onnxruntime-genai's model builder (chat-tiny-gqa, with num_logits_to_keep; chat-tiny-gqa-packed,
// its CPU form with packed QKV, rotary inside the attention and gate/up packed), weights in external
// `.onnx_data` files (chat-tiny-split) and an older merged decoder with use_cache_branch (chat-tiny-merged,
// found without any manifest option). A second turn reuses the prompt cache in every layout. Each layout runs
// as the server runs it by default (GroupQueryAttention graphs on onnxruntime's C API with the cache in place,
// the others through transformers.js's forward), through onnxruntime-node's direct session runs, and the
// GroupQueryAttention ones also through transformers.js's forward.
import assert from "node:assert/strict";
import { GENERATED_MODELS, startTestServer, type TestServer } from "../helpers.ts";
import { WEATHER_TOOL } from "../support/tools.ts";
import type { ManifestJson } from "../../src/engines/manifest.ts";

const HELLO = "Hello from chat-tiny!";
const HI = [{ role: "user" as const, content: "Hi there!" }];
const WEATHER = [{ role: "user" as const, content: "What's the weather in Paris?" }];
const FOREVER = [{ role: "user" as const, content: "Count forever" }];

const LAYOUTS: Record<string, { folder: string; dtypes: string[] }> = {
  decomposed: { folder: "chat-tiny", dtypes: ["fp16", "q8", "int8", "q4", "q4f16", "bnb4"] },
  gqa: { folder: "chat-tiny-gqa", dtypes: ["fp32", "fp16", "q8", "q4", "q4f16"] },
  packed: { folder: "chat-tiny-gqa-packed", dtypes: ["fp32", "fp16", "q8", "q4", "q4f16"] },
  split: { folder: "chat-tiny-split", dtypes: ["fp32", "q4"] },
  merged: { folder: "chat-tiny-merged", dtypes: ["fp32", "q4"] },
};

/** Layouts whose graphs append to their cache in place (GroupQueryAttention): run natively by default. */
const NATIVE = new Set(["gqa", "packed"]);

const models: ManifestJson["models"] = {};
for (const [layout, { folder, dtypes }] of Object.entries(LAYOUTS)) {
  for (const dtype of dtypes) {
    const entry = { task: "chat", path: `generated/${folder}`, dtype, device: "cpu" } as const;
    models[`${layout}-${dtype}`] = entry;
    // The same through onnxruntime-node's direct session runs (opt-in).
    models[`${layout}-${dtype}-direct`] = {
      ...entry,
      options: { onnx_direct_run: true, onnx_native: false },
    };
    if (NATIVE.has(layout)) {
      models[`${layout}-${dtype}-forward`] = { ...entry, options: { onnx_native: false } };
    }
  }
}

/** The backend each model reported when it loaded. */
function backends(t: TestServer): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of t.logs) {
    const l = JSON.parse(line);
    if (l.msg === "model loaded") out.set(l.model, l.backend);
  }
  return out;
}

async function withServer(fn: (t: TestServer) => Promise<void>, flags: string[] = []) {
  const manifest = { ...GENERATED_MODELS, models: { ...GENERATED_MODELS.models, ...models } };
  const t = await startTestServer({ manifest, flags });
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

Deno.test("every ONNX layout gives chat-tiny's exact replies and usage", async () => {
  await withServer(async (t) => {
    const ask = async (model: string) => {
      const hi = await t.client.chat.completions.create({ model, messages: HI });
      const call = await t.client.chat.completions.create({
        model,
        messages: WEATHER,
        tools: [WEATHER_TOOL],
      });
      const stream = await t.client.chat.completions.create({
        model,
        messages: FOREVER,
        max_tokens: 40,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = "";
      let usage: unknown = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? "";
        if (chunk.usage) usage = chunk.usage;
      }
      return {
        hi: hi.choices[0].message.content,
        hiUsage: hi.usage,
        call: call.choices[0].message.tool_calls?.map((c) => c.type === "function" ? c.function : c),
        finish: call.choices[0].finish_reason,
        text,
        usage,
      };
    };
    const reference = await ask("chat-tiny");
    assert.equal(reference.hi, HELLO);
    assert.deepEqual(reference.call, [{ name: "get_weather", arguments: '{"city": "Paris"}' }]);
    assert.match(reference.text, /^Tick tock tick tock/);
    for (const model of Object.keys(models)) {
      assert.deepEqual(await ask(model), reference, `${model} differs from the fp32 reference`);
    }
    const loaded = backends(t);
    for (const model of Object.keys(models)) {
      const native = NATIVE.has(model.split("-")[0]) && !/-(direct|forward)$/.test(model);
      assert.equal(/C API/.test(loaded.get(model) ?? ""), native, `${model}: ${loaded.get(model)}`);
    }
  });
});

Deno.test("native decoders: forks and the prompt cache never write into each other's cache", async () => {
  await withServer(async (t) => {
    // Two sampled choices fork the prefilled cache; the second turn then continues the first choice from the
    // prompt cache. A fork that wrote into a shared buffer would change what the first choice's cache holds.
    const run = async (model: string) => {
      const r = await t.client.chat.completions.create({
        model,
        messages: FOREVER,
        max_tokens: 12,
        n: 2,
        seed: 7,
        temperature: 1.5,
      });
      const choices = r.choices.map((c) => c.message.content ?? "");
      const next = await t.client.chat.completions.create({
        model,
        messages: [...FOREVER, { role: "assistant", content: choices[0] }, ...FOREVER],
        max_tokens: 12,
        // The numbers, not only the (robust) greedy text, show what the reused cache held.
        logprobs: true,
      });
      return {
        choices,
        next: next.choices[0].logprobs?.content?.map((l) => [l.token, l.logprob]),
        cached: next.usage?.prompt_tokens_details,
      };
    };
    for (const layout of ["gqa-q4", "packed-q4", "packed-fp16"]) {
      const native = await run(layout);
      assert.notEqual(native.choices[0], native.choices[1], `${layout}: the choices should differ`);
      assert.ok((native.cached?.cached_tokens ?? 0) > 10, `${layout}: ${JSON.stringify(native.cached)}`);
      // The same files through transformers.js, whose caches are never written in place.
      assert.deepEqual(native, await run(`${layout}-forward`), layout);
    }
    // Two sequences at once keep two closed ones as the prompt cache: both choices stay reusable.
  }, ["--parallel=2"]);
});

Deno.test("every ONNX layout reuses its prompt cache on a second turn, with the uncached reply", async () => {
  await withServer(async (t) => {
    const turn2 = [...HI, { role: "assistant" as const, content: HELLO }, ...HI];
    for (const model of Object.keys(models)) {
      await t.client.chat.completions.create({ model, messages: HI });
      const second = await t.client.chat.completions.create({ model, messages: turn2 });
      assert.equal(second.choices[0].message.content, HELLO, model);
      const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
      // Everything but the closing assistant turn's end and the new user turn came from the first request.
      assert.ok(cached > 10 && cached < second.usage!.prompt_tokens, `${model}: cached_tokens ${cached}`);
    }
  });
});
