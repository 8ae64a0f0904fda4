// End to end on WebGPU: the runtime choice is process-wide, so this test starts the real server in its own
// process with --device=webgpu (Deno's navigator.gpu + onnxruntime-web; on CI the llvmpipe software adapter
// from Debian's mesa-vulkan-drivers) and chats with chat-tiny through the official `openai` client, streamed
// and not. Without any WebGPU adapter it fails on CI (CI=true) and is skipped elsewhere, saying why.
import assert from "node:assert/strict";
import { join } from "node:path";
import OpenAI from "openai";
import { GENERATED_MODELS, MODELS_DIR, REPO_ROOT } from "../helpers.ts";

const MODEL = "chat-tiny";
const HELLO = "Hello from chat-tiny!";
/** Other ONNX layouts of chat-tiny (tests/e2e/onnx_layouts_test.ts runs them all on the CPU). */
const LAYOUTS = Object.fromEntries(
  [
    ["gqa", "chat-tiny-gqa", "fp32"],
    ["gqa", "chat-tiny-gqa", "q4"],
    ["packed", "chat-tiny-gqa-packed", "q4"],
    ["split", "chat-tiny-split", "q4"],
    ["merged", "chat-tiny-merged", "q4"],
  ].map(([name, folder, dtype]) => [
    `${name}-${dtype}`,
    { task: "chat", path: `generated/${folder}`, dtype, device: "auto" },
  ]),
);

async function adapterName(): Promise<string | null> {
  // The Vulkan loader complains without a runtime dir; any writable one will do.
  if (!Deno.env.get("XDG_RUNTIME_DIR")) {
    const dir = Deno.makeTempDirSync({ prefix: "oai-xdg-" });
    Deno.env.set("XDG_RUNTIME_DIR", dir);
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
  }
  try {
    const a = await navigator.gpu?.requestAdapter();
    return a ? a.info.description || a.info.vendor || "unknown" : null;
  } catch {
    return null;
  }
}

const adapter = await adapterName();
const onCi = !!Deno.env.get("CI");
if (!adapter && !onCi) {
  console.warn("chat_webgpu_test: skipped, no WebGPU adapter (install mesa-vulkan-drivers for llvmpipe)");
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test({
  name: "chat completions on WebGPU (separate server process)",
  ignore: !adapter && !onCi,
  sanitizeResources: false,
  async fn() {
    assert.ok(adapter, "no WebGPU adapter: install mesa-vulkan-drivers (llvmpipe) on this machine");
    const dir = await Deno.makeTempDir({ prefix: "oai-webgpu-" });
    const manifest = join(dir, "manifest.json");
    // Only the chat model: the runtime (and so every model of the process) is WebGPU here.
    await Deno.writeTextFile(
      manifest,
      JSON.stringify({
        defaults: { chat: MODEL },
        aliases: {},
        models: { [MODEL]: { ...GENERATED_MODELS.models[MODEL], device: "auto" }, ...LAYOUTS },
      }),
    );
    const port = freePort();
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        join(REPO_ROOT, "main.ts"),
        `--port=${port}`,
        "--host=127.0.0.1",
        `--models-dir=${MODELS_DIR}`,
        `--manifest=${manifest}`,
        "--device=webgpu",
        "--offline",
        "--preload=true",
        "--log-format=json",
      ],
      cwd: REPO_ROOT,
      // The Vulkan loader wants a runtime dir; a private one keeps its complaints out of the log.
      env: { XDG_RUNTIME_DIR: dir },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const logLines: string[] = [];
    const logsDone = (async () => {
      const decoder = new TextDecoderStream();
      let buf = "";
      for await (const chunk of child.stderr.pipeThrough(decoder)) {
        buf += chunk;
        const lines = buf.split("\n");
        buf = lines.pop()!;
        logLines.push(...lines);
      }
    })();
    const url = `http://127.0.0.1:${port}`;
    try {
      // Ready once every model is loaded on the GPU (shader compilation on llvmpipe takes seconds each, and
      // longer when the rest of the test suite shares the CPU: one still loading at 60 s failed a run).
      const deadline = Date.now() + 300_000;
      let ready = false;
      while (!ready && Date.now() < deadline) {
        try {
          const res = await fetch(`${url}/v1/models`);
          const body = await res.json();
          ready = body.data?.length === 1 + Object.keys(LAYOUTS).length &&
            body.data.every((m: { state: string }) => m.state === "ready");
          if (body.data?.some((m: { id: string; state: string }) => m.state === "failed")) break;
        } catch {
          // not listening yet
        }
        if (!ready) await new Promise((r) => setTimeout(r, 250));
      }
      assert.ok(ready, `the model did not load on WebGPU:\n${logLines.slice(-20).join("\n")}`);

      const logs = logLines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
      const runtime = logs.find((l) => l.msg === "transformers runtime");
      assert.equal(runtime?.device, "webgpu", JSON.stringify(runtime));
      const loaded = logs.find((l) => l.msg === "chat model ready" && l.model === MODEL);
      assert.match(loaded?.backend ?? "", /^webgpu \(.+\) via onnxruntime-web fp32$/);
      assert.equal(loaded?.adapter, adapter);

      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-test", maxRetries: 0, timeout: 120_000 });
      const res = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "Hi there!" }],
        temperature: 0,
      });
      assert.equal(res.choices[0].message.content, HELLO);
      assert.equal(res.choices[0].finish_reason, "stop");
      assert.equal(res.usage?.completion_tokens, 6);

      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "Say something in unicode" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = "";
      let usage = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? "";
        usage = chunk.usage ?? usage;
      }
      assert.equal(text, "Café 東京 🙂");
      assert.equal(usage?.completion_tokens, 16);

      const forever = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "Count forever" }],
        max_tokens: 5,
      });
      assert.equal(forever.choices[0].message.content, "Tick tock tick tock tick");
      assert.equal(forever.choices[0].finish_reason, "length");

      // The fused operators, external data and a merged decoder on the GPU, with the same replies.
      for (const model of Object.keys(LAYOUTS)) {
        const hi = await client.chat.completions.create({
          model,
          messages: [{ role: "user", content: "Hi there!" }],
        });
        assert.equal(hi.choices[0].message.content, HELLO, model);
        const tick = await client.chat.completions.create({
          model,
          messages: [{ role: "user", content: "Count forever" }],
          max_tokens: 5,
        });
        assert.equal(tick.choices[0].message.content, "Tick tock tick tock tick", model);
      }
    } finally {
      child.kill("SIGTERM");
      const status = await child.status;
      await logsDone.catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      assert.equal(status.code, 0, `server exit ${status.code}:\n${logLines.slice(-10).join("\n")}`);
    }
  },
});
