// End to end on llama.cpp's Vulkan build: the variant is process-wide, so the real server runs in its own
// process with --llama-variant=vulkan (on CI Mesa's software Vulkan device, llvmpipe, which ggml-vulkan takes
// only with GGML_VK_VISIBLE_DEVICES=0). The same GGUF files serve twice in that one server: on the Vulkan device
// (device auto) and on the CPU (device: cpu, a GPU build serving a CPU model), and every feature must answer
// exactly alike through the official `openai` client: text, tool calls, json_schema, logprobs (to float
// precision), n with a seed, stop sequences, embeddings, concurrent streams and the prompt cache; the server's
// own report (/v1/models, /metrics, the backend label in its log) must say where each model runs. Without the
// Vulkan variant or a Vulkan driver it fails on CI (CI=true) and is skipped elsewhere, saying why.
import assert from "node:assert/strict";
import { CHAT_FEATURES, HI } from "../support/chat_features.ts";
import { spawnOnVulkan, vulkanMissing } from "../support/vulkan.ts";

const why = vulkanMissing("the Vulkan end-to-end test");

const CHAT = "generated/chat-tiny/gguf/chat-tiny-F32.gguf";
const CHAT_Q8 = "generated/chat-tiny/gguf/chat-tiny-Q8_0.gguf";
const EMBED = "generated/embed-tiny/gguf/embed-tiny-F32.gguf";
/**
 * Each file twice: on the Vulkan device and kept on the CPU, in the same server: three contexts on the device
 * (Debian 12's Mesa 22.3.6 crashed in lavapipe with three decoding at once; tests/support/vulkan.ts asks for 25).
 */
const VULKAN_MANIFEST = {
  models: {
    "chat-vk": { task: "chat" as const, path: CHAT },
    "chat-cpu": { task: "chat" as const, path: CHAT, device: "cpu" as const },
    "chat-q8-vk": { task: "chat" as const, path: CHAT_Q8 },
    "chat-q8-cpu": { task: "chat" as const, path: CHAT_Q8, device: "cpu" as const },
    "embed-vk": { task: "embedding" as const, path: EMBED },
    "embed-cpu": { task: "embedding" as const, path: EMBED, device: "cpu" as const },
  },
};
/** Everything but ids, timestamps and the model's name; logprobs pulled out to compare to float precision. */
function comparable(r: unknown, logprobs: number[]): unknown {
  const text = JSON.stringify({
    choices: (r as { choices: unknown }).choices,
    usage: (r as { usage: unknown }).usage,
  })
    .replace(/"call_[A-Za-z0-9]+"/g, '"call"');
  return JSON.parse(text, (k, v) => {
    if (k === "logprob") return logprobs.push(v), 0;
    if (k === "cached_tokens") return 0;
    return v;
  });
}

Deno.test({
  name: "gguf on Vulkan (llvmpipe): the server reports the device, and every feature answers as on the CPU",
  ignore: why !== null,
  sanitizeResources: false,
  fn: async (t) => {
    const { server, client } = await spawnOnVulkan(VULKAN_MANIFEST, [
      "--llama-variant=vulkan",
      "--parallel=4",
    ]);
    try {
      await t.step(
        "placement: Vulkan0 (llvmpipe) with every layer, or the CPU, as each entry asks",
        async () => {
          for (const m of ["chat-vk", "chat-cpu", "chat-q8-vk", "chat-q8-cpu", "embed-vk", "embed-cpu"]) {
            if (m.startsWith("chat")) {
              await client.chat.completions.create({ model: m, messages: HI, max_tokens: 1 });
            } else await client.embeddings.create({ model: m, input: "warm" });
          }
          const models = await (await fetch(`${server.url}/v1/models`)).json() as {
            data: {
              id: string;
              device?: string;
              gpu_layers?: number;
              layers?: number;
              gpu_memory_bytes?: number;
            }[];
          };
          const by = (id: string) => models.data.find((m) => m.id === id)!;
          for (const id of ["chat-vk", "chat-q8-vk", "embed-vk"]) {
            const m = by(id);
            assert.match(m.device ?? "", /^Vulkan0 \(llvmpipe/, `${id}: ${JSON.stringify(m)}`);
            assert.ok(m.layers! > 0 && m.gpu_layers === m.layers, `${id}: ${JSON.stringify(m)}`);
            assert.ok(m.gpu_memory_bytes! > 1_000_000, `${id}: ${JSON.stringify(m)}`);
          }
          for (const id of ["chat-cpu", "chat-q8-cpu", "embed-cpu"]) {
            const m = by(id);
            assert.equal(m.device, "CPU", `${id}: ${JSON.stringify(m)}`);
            assert.equal(m.gpu_layers, 0);
            assert.equal(m.gpu_memory_bytes, 0);
          }
          const metrics = await (await fetch(`${server.url}/metrics`)).text();
          assert.match(
            metrics,
            /oai_model_gpu_memory_bytes\{model="chat-vk",device="Vulkan0 \(llvmpipe[^"]*"\} [1-9]\d+/,
          );
          assert.match(metrics, /oai_model_gpu_layers\{model="chat-vk"\} [1-9]/);
          assert.match(metrics, /oai_model_gpu_memory_bytes\{model="chat-cpu",device="CPU"\} 0/);
          assert.match(server.log(), /"backend":"llama\.cpp Vulkan0 \(llvmpipe[^"]*\) F32"/);
          assert.match(server.log(), /"backend":"llama\.cpp CPU F32"/);
        },
      );

      const bodies: Record<string, Record<string, unknown>> = {
        ...CHAT_FEATURES,
        "history, sampled": {
          messages: [
            { role: "system", content: "Be brief." },
            ...HI,
            { role: "assistant", content: "Hello" },
            {
              role: "user",
              content: "Count forever",
            },
          ],
          max_tokens: 24,
          temperature: 1,
          seed: 7,
        },
      };
      // F32 weights compute alike to float precision. At Q8_0 the CPU multiplies by activations it quantized to
      // Q8_0 too, ggml-vulkan by float activations: logprobs differ in the third decimal (-10.2853 vs -10.2823),
      // so a long draw at temperature 1.5 may flip; greedy replies, tools and JSON stay identical.
      const cases = [["chat-vk", "chat-cpu", 1e-3], ["chat-q8-vk", "chat-q8-cpu", 1e-2]] as const;
      for (const [gpu, cpu, tolerance] of cases) {
        for (const [name, body] of Object.entries(bodies)) {
          if (gpu === "chat-q8-vk" && name === "n=2 with a seed") continue;
          await t.step(`${gpu}: ${name}`, async () => {
            const la: number[] = [];
            const lb: number[] = [];
            const a = comparable(await client.chat.completions.create({ model: cpu, ...body } as never), la);
            const b = comparable(await client.chat.completions.create({ model: gpu, ...body } as never), lb);
            assert.deepEqual(b, a);
            la.forEach((x, i) => assert.ok(Math.abs(x - lb[i]) < tolerance, `logprob ${lb[i]} vs ${x}`));
          });
        }
      }

      await t.step("embeddings: the same vectors as on the CPU", async () => {
        const input = ["the quick brown fox", "a local server", "Paris weather"];
        const a = await client.embeddings.create({ model: "embed-cpu", input });
        const b = await client.embeddings.create({ model: "embed-vk", input });
        assert.equal(b.usage.prompt_tokens, a.usage.prompt_tokens);
        for (let i = 0; i < input.length; i++) {
          const x = a.data[i].embedding;
          const y = b.data[i].embedding;
          assert.equal(y.length, x.length);
          const dot = x.reduce((s, v, k) => s + v * y[k], 0);
          assert.ok(dot > 0.99999, `input ${i}: cosine ${dot}`);
        }
      });

      await t.step(
        "8 concurrent streams over two chat models and embeddings on the Vulkan device: the CPU's replies",
        async () => {
          const prompts = [
            "Hi there!",
            "Count forever",
            "What's the weather in Paris?",
            "Say something in unicode",
          ];
          const expected = new Map<string, string>();
          for (const model of ["chat-cpu", "chat-q8-cpu"]) {
            for (const p of prompts) {
              const r = await client.chat.completions.create({
                model,
                messages: [{ role: "user", content: p }],
                max_tokens: 20,
              });
              expected.set(`${model.replace("-cpu", "")} ${p}`, r.choices[0].message.content ?? "");
            }
          }
          const inputs = ["the quick brown fox", "a local server"];
          const vectors = (await client.embeddings.create({ model: "embed-cpu", input: inputs })).data;
          // Three contexts on the device decoding at once: each chat model's 4 streams and the embeddings.
          const [got, embedded] = await Promise.all([
            Promise.all(Array.from({ length: 8 }, async (_, i) => {
              const p = prompts[i % prompts.length];
              const model = i % 2 ? "chat-q8-vk" : "chat-vk";
              const stream = await client.chat.completions.create({
                model,
                messages: [{ role: "user", content: p }],
                max_tokens: 20,
                stream: true,
              });
              let text = "";
              for await (const c of stream) text += c.choices[0]?.delta?.content ?? "";
              return [`${model.replace("-vk", "")} ${p}`, text] as const;
            })),
            Promise.all(
              Array.from({ length: 2 }, () => client.embeddings.create({ model: "embed-vk", input: inputs })),
            ),
          ]);
          for (const [key, text] of got) assert.equal(text, expected.get(key), key);
          for (const e of embedded) {
            e.data.forEach((d, i) => {
              const dot = d.embedding.reduce((sum, v, k) => sum + v * vectors[i].embedding[k], 0);
              assert.ok(dot > 0.99999, `input ${i}: cosine ${dot}`);
            });
          }
        },
      );

      await t.step(
        "prompt cache: a repeated conversation reads its prefix from the cache, same reply",
        async () => {
          const messages = [
            { role: "system" as const, content: "You are a helpful assistant. ".repeat(20) },
            ...HI,
          ];
          const first = await client.chat.completions.create({ model: "chat-vk", messages, max_tokens: 8 });
          const second = await client.chat.completions.create({ model: "chat-vk", messages, max_tokens: 8 });
          assert.equal(second.choices[0].message.content, first.choices[0].message.content);
          const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
          assert.ok(cached > 0 && cached < second.usage!.prompt_tokens, `cached ${cached}`);
        },
      );
    } finally {
      const status = await server.stop();
      assert.ok(
        status.signal === "SIGTERM" || status.code === 0 || status.code === 143,
        server.log().slice(-2000),
      );
    }
  },
});

Deno.test({
  name:
    "gguf on Vulkan (llvmpipe): a prompt joins the running one's neighbour slot, the cells held there moved intact",
  ignore: why !== null,
  sanitizeResources: false,
  fn: async () => {
    const manifest = {
      models: {
        "chat-vk": VULKAN_MANIFEST.models["chat-vk"],
        "chat-cpu": VULKAN_MANIFEST.models["chat-cpu"],
      },
    };
    const { server, client } = await spawnOnVulkan(manifest, ["--llama-variant=vulkan", "--parallel=4"]);
    type Msg = { role: "user" | "assistant"; content: string };
    const ask = async (model: string, messages: Msg[], max_tokens = 8) => {
      const r = await client.chat.completions.create({ model, messages, max_tokens });
      return {
        text: r.choices[0].message.content ?? "",
        cached: r.usage?.prompt_tokens_details?.cached_tokens ?? 0,
        prompt: r.usage!.prompt_tokens,
      };
    };
    try {
      // Four conversations one after another fill the fresh slots 0..3; the 2nd's next turn then makes slot 1
      // the one left last: least recent use gives up slots 0, 2, 3, 1 in that order.
      const topics = ["rivers and boats", "mountain weather", "old clocks", "garden birds"];
      const turns: Msg[][] = [];
      for (const t of topics) {
        const m: Msg[] = [{ role: "user", content: `Tell me a long story about ${t}, please.` }];
        m.push({ role: "assistant", content: (await ask("chat-vk", m)).text });
        turns.push(m);
      }
      turns[1].push({ role: "user", content: "And then?" });
      turns[1].push({ role: "assistant", content: (await ask("chat-vk", turns[1])).text });
      // A long stream takes slot 0; while it runs a second prompt would take slot 2 (left longest ago but one),
      // away from it: it takes slot 1 instead, and slot 1's cells (the 2nd conversation's) move to slot 2, whose
      // own (the 3rd's) go, as least recent use has it.
      const long: Msg[] = [{ role: "user", content: "Count forever" }];
      const stream = await client.chat.completions.create({
        model: "chat-vk",
        messages: long,
        max_tokens: 60,
        stream: true,
      });
      const it = stream[Symbol.asyncIterator]();
      let longText = "";
      for (let c = await it.next(); !c.done; c = await it.next()) {
        longText += c.value.choices[0]?.delta?.content ?? "";
        if (longText) break;
      }
      const late: Msg[] = [{ role: "user", content: "What's the weather in Paris?" }];
      const lateReply = await ask("chat-vk", late);
      for (let c = await it.next(); !c.done; c = await it.next()) {
        longText += c.value.choices[0]?.delta?.content ?? "";
      }
      assert.equal(longText, (await ask("chat-cpu", long, 60)).text);
      assert.equal(lateReply.text, (await ask("chat-cpu", late)).text);
      // The kept conversations (2nd, moved; 4th, in place) go on from their cells, exactly as on the CPU; the
      // 3rd's cells went.
      for (const i of [1, 3, 2]) {
        const next: Msg[] = [...turns[i], { role: "user", content: "Go on." }];
        const vk = await ask("chat-vk", next);
        const cpu = await ask("chat-cpu", next);
        assert.equal(vk.text, cpu.text, `conversation ${i + 1}`);
        const first = (await ask("chat-cpu", turns[i].slice(0, 1), 1)).prompt;
        assert.equal(
          vk.cached >= first,
          i !== 2,
          `conversation ${i + 1}: ${vk.cached} cached of ${vk.prompt}`,
        );
      }
    } finally {
      await server.stop();
    }
  },
});
