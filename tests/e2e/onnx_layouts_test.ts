// End to end: every ONNX layout real repos ship, each generated from chat-tiny's crafted weights, served by one
// server and asked the same questions through the official `openai` client: each must give chat-tiny's exact
// replies (plain text, a tool call, a long streamed reply) and the same usage as the fp32 reference. Layouts:
// model_{fp16,int8,bnb4,q4f16}.onnx beside fp32/q8/q4 (decomposed attention as optimum exports it), the fused
// operators of onnxruntime-genai's model builder (chat-tiny-gqa, with num_logits_to_keep; chat-tiny-gqa-packed,
// its CPU form with packed QKV, rotary inside the attention and gate/up packed), weights in external
// `.onnx_data` files (chat-tiny-split) and an older merged decoder with use_cache_branch (chat-tiny-merged,
// found without any manifest option). A second turn reuses the prompt cache in every layout. Each layout runs
// twice: through transformers.js's forward (the default) and through the backend's direct session runs.
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

const models: ManifestJson["models"] = {};
for (const [layout, { folder, dtypes }] of Object.entries(LAYOUTS)) {
  for (const dtype of dtypes) {
    models[`${layout}-${dtype}`] = { task: "chat", path: `generated/${folder}`, dtype, device: "cpu" };
    // The same through the backend's direct session runs (opt-in).
    models[`${layout}-${dtype}-direct`] = {
      task: "chat",
      path: `generated/${folder}`,
      dtype,
      device: "cpu",
      options: { onnx_direct_run: true },
    };
  }
}

async function withServer(fn: (t: TestServer) => Promise<void>) {
  const manifest = { ...GENERATED_MODELS, models: { ...GENERATED_MODELS.models, ...models } };
  const t = await startTestServer({ manifest });
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
  });
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
