// Faults: a corrupt model file, a model whose loader throws, and a missing native library each give a clear
// 503 for that model while every other model keeps serving; SIGTERM during a load and during a generation
// exits cleanly (code 0, the in-flight stream finished).
import assert from "node:assert/strict";
import { join } from "node:path";
import { copy } from "./copy_dir.ts";
import { errorOf, GENERATED_MODELS, MODELS_DIR, spawnServer, startTestServer } from "../helpers.ts";
import type { ManifestJson } from "../../src/engines/manifest.ts";

Deno.test("faults: corrupt and failing models are 503 for themselves only", async () => {
  // A copy of chat-tiny whose ONNX file is cut in half, inside the models folder (where models must live).
  const broken = join(MODELS_DIR, "generated", `broken-chat-${crypto.randomUUID().slice(0, 8)}`);
  await copy(join(MODELS_DIR, "generated", "chat-tiny"), broken);
  const onnx = join(broken, "onnx", "model.onnx");
  const bytes = await Deno.readFile(onnx);
  await Deno.writeFile(onnx, bytes.slice(0, bytes.length / 2));
  const manifest: ManifestJson = {
    ...GENERATED_MODELS,
    models: {
      ...GENERATED_MODELS.models,
      "broken-chat": {
        task: "chat",
        path: broken.slice(MODELS_DIR.length + 1),
        dtype: "fp32",
        device: "cpu",
      },
    },
  };
  const t = await startTestServer({
    manifest,
    flags: ["--whisper-lib=/nonexistent/lib"],
  });
  try {
    const chat = (model: string) =>
      t.client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi there!" }] });
    await assert.rejects(chat("broken-chat"), (e: unknown) => {
      const err = e as { status: number; error: { message: string } };
      assert.equal(err.status, 503);
      assert.match(err.error.message, /broken-chat/);
      return true;
    });
    // The missing whisper library: 503 naming the build command.
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(64)]), "a.wav");
    form.set("model", "whisper-1");
    const res = await fetch(`${t.url}/v1/audio/transcriptions`, { method: "POST", body: form });
    assert.equal(res.status, 503);
    assert.match(errorOf(await res.json()).message, /native:build/);
    // Everything else keeps working.
    assert.equal((await chat("chat-tiny")).choices[0].message.content, "Hello from chat-tiny!");
    const emb = await t.client.embeddings.create({ model: "embed-tiny", input: "still fine" });
    assert.equal(emb.data.length, 1);
    const ready = await fetch(`${t.url}/health/ready`);
    assert.equal(ready.status, 503, "not ready while a model is failed");
    assert.equal((await ready.json()).models["broken-chat"], "failed");
  } finally {
    await t.close();
    await Deno.remove(broken, { recursive: true });
  }
});

Deno.test("faults: SIGTERM during a model load exits cleanly", async () => {
  const server = await spawnServer({ flags: ["--preload"] });
  // The preload has just started; stop at once.
  const status = await server.stop();
  assert.equal(status.code, 0, server.log());
});

Deno.test("faults: SIGTERM during a generation lets the stream finish, then exits 0", async () => {
  const server = await spawnServer();
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "chat-tiny",
      messages: [{ role: "user", content: "Count forever" }],
      max_tokens: 300,
      stream: true,
    }),
  });
  assert.equal(res.status, 200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = (await reader.read()).value ?? "";
  const stopped = server.stop();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  assert.equal((await stopped).code, 0);
  const frames = text.split("\n\n").filter(Boolean);
  assert.equal(frames.at(-1), "data: [DONE]", "the stream ran to its end");
  const finish = JSON.parse(frames.at(-2)!.slice(6)).choices[0].finish_reason;
  assert.equal(finish, "length");
});
