// End to end on whisper.cpp's Vulkan build (native/build.ts --gpu vulkan): the real server in its own process
// with --whisper-variant=vulkan, on CI Mesa's software Vulkan device (llvmpipe, taken by ggml-vulkan only with
// GGML_VK_VISIBLE_DEVICES=0). The generated whisper model serves twice in that server, on the Vulkan device and
// kept on the CPU (device: cpu), and must transcribe alike through the official `openai` client; the server's
// own report says where each runs. Fails on CI without the build or the driver, skipped elsewhere.
import assert from "node:assert/strict";
import { join } from "node:path";
import { toFile } from "openai";
import { REPO_ROOT } from "../helpers.ts";
import { spawnOnVulkan, vulkanMissing } from "../support/vulkan.ts";

const why = vulkanMissing("the whisper.cpp Vulkan test", true);
/** What the generated model writes for any audio of at least 2 s (tools/models/whisper_tiny.ts). */
const SENTENCE = "The quick brown fox jumps over the lazy dog.";
const MODEL = { path: "generated/whisper-tiny-test", options: { file: "ggml-model.bin" } };

Deno.test({
  name: "whisper.cpp on Vulkan (llvmpipe): the server reports the device and transcribes as on the CPU",
  ignore: why !== null,
  sanitizeResources: false,
  fn: async () => {
    const { server, client } = await spawnOnVulkan({
      models: {
        "whisper-vk": { task: "transcription", ...MODEL },
        "whisper-cpu": { task: "transcription", ...MODEL, device: "cpu" },
      },
    }, ["--whisper-variant=vulkan"]);
    try {
      const wav = await Deno.readFile(join(REPO_ROOT, "tests/fixtures/audio/speech.wav"));
      const file = () => toFile(wav, "speech.wav", { type: "audio/wav" });
      const results: Record<string, unknown> = {};
      for (const model of ["whisper-cpu", "whisper-vk"]) {
        const r = await client.audio.transcriptions.create({
          model,
          file: await file(),
          response_format: "verbose_json",
          timestamp_granularities: ["segment"],
        });
        assert.equal(r.text, SENTENCE, model);
        results[model] = JSON.parse(
          JSON.stringify(r),
          (k, v) => ["avg_logprob", "compression_ratio", "no_speech_prob"].includes(k) ? +v.toFixed(2) : v,
        );
      }
      assert.deepEqual(results["whisper-vk"], results["whisper-cpu"]);
      const models = await (await fetch(`${server.url}/v1/models`)).json() as {
        data: { id: string; device?: string; gpu_memory_bytes?: number; layers?: number }[];
      };
      const vk = models.data.find((m) => m.id === "whisper-vk")!;
      const cpu = models.data.find((m) => m.id === "whisper-cpu")!;
      assert.match(vk.device ?? "", /^Vulkan0 \(llvmpipe/, JSON.stringify(vk));
      assert.ok(vk.gpu_memory_bytes! > 1000, JSON.stringify(vk));
      assert.equal(vk.layers, undefined, "whisper runs whole on its device: no layer counts");
      assert.equal(cpu.device, "CPU");
      assert.equal(cpu.gpu_memory_bytes, 0);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      assert.match(
        metrics,
        /oai_model_gpu_memory_bytes\{model="whisper-vk",device="Vulkan0 \(llvmpipe[^"]*"\} [1-9]/,
      );
      assert.match(server.log(), /whisper\.cpp [^"]*Vulkan0 \(llvmpipe/);
    } finally {
      await server.stop();
    }
  },
});
