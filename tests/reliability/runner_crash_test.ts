// One bad model never takes the server down. A GGUF whose rope dimension (64) differs from its head size
// (32) passes llama.cpp's file load and then aborts the process in GGML_ASSERT(n_embd_head == n_rot), as such
// files in the wild do: the server starts all the same (the crash is at preload), restarts the model's runner
// with backoff, then reports it `failed` with the assert line in /v1/models, /health/ready and /metrics, and
// answers its requests with a 503 naming the model, while the other models keep serving.
import assert from "node:assert/strict";
import { join } from "node:path";
import { errorOf, GENERATED_MODELS, MODELS_DIR, REPO_ROOT, spawnServer } from "../helpers.ts";

/** chat-tiny's GGUF with `qwen2.rope.dimension_count` (a u32) set to 64. */
async function badRopeGguf(dir: string): Promise<string> {
  const bytes = await Deno.readFile(join(MODELS_DIR, "generated/chat-tiny/gguf/chat-tiny-Q8_0.gguf"));
  const key = new TextEncoder().encode("qwen2.rope.dimension_count");
  let at = -1;
  for (let i = 0; i < 4096 && at < 0; i++) if (key.every((b, j) => bytes[i + j] === b)) at = i;
  assert.ok(at > 0, "the key is in the header");
  const view = new DataView(bytes.buffer, at + key.length);
  assert.equal(view.getUint32(0, true), 4, "a u32");
  assert.equal(view.getUint32(4, true), 32);
  view.setUint32(4, 64, true);
  const file = join(dir, "bad-rope.gguf");
  await Deno.writeFile(file, bytes);
  return file;
}

Deno.test("a model whose runner aborts at load: the server starts, restarts it, reports it failed, serves the rest", async () => {
  const models = await Deno.makeTempDir({ prefix: "oai-crash-models-" });
  await Deno.symlink(join(MODELS_DIR, "generated"), join(models, "generated"));
  await badRopeGguf(models);
  const server = await spawnServer({
    flags: [`--models-dir=${models}`, "--preload=true"],
    manifest: {
      ...GENERATED_MODELS,
      models: {
        ...GENERATED_MODELS.models,
        "bad-rope": { task: "chat", path: "bad-rope.gguf" },
        "chat-gguf": { task: "chat", path: "generated/chat-tiny/gguf/chat-tiny-Q8_0.gguf" },
      },
    },
  });
  try {
    // Three crashes (the preload, two restarts 0.5 s and 1 s later), then failed.
    let listed: { id: string; state: string; error?: string }[] = [];
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      listed = (await (await fetch(`${server.url}/v1/models`)).json()).data;
      if (listed.find((m) => m.id === "bad-rope")?.state === "failed") break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const bad = listed.find((m) => m.id === "bad-rope")!;
    assert.equal(bad.state, "failed", server.log().slice(-3000));
    assert.match(bad.error!, /n_rot/);
    assert.match(bad.error!, /aborted/);
    assert.match(bad.error!, /crashed 3 times/);
    assert.ok(
      !bad.error!.includes(REPO_ROOT) && !bad.error!.includes("/src/"),
      `no server path: ${bad.error}`,
    );

    const ready = await fetch(`${server.url}/health/ready`);
    assert.equal(ready.status, 503);
    const readyBody = await ready.json();
    assert.equal(readyBody.models["bad-rope"], "failed");
    assert.match(readyBody.errors["bad-rope"], /n_rot/);

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /oai_model_failed\{model="bad-rope",reason="[^"]*n_rot[^"]*"\} 1/);
    assert.match(metrics, /oai_model_crashes_total\{model="bad-rope"\} 3/);

    // Its requests: a 503 naming the model and what happened.
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "bad-rope", messages: [{ role: "user", content: "Hi there!" }] }),
    });
    assert.equal(res.status, 503);
    const err = errorOf(await res.json());
    assert.match(err.message, /bad-rope/);
    assert.match(err.message, /n_rot/);

    // Every other model serves: a GGUF, an ONNX model and an embedding model.
    for (const model of ["chat-gguf", "chat-tiny"]) {
      const ok = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "Hi there!" }] }),
      });
      assert.equal(ok.status, 200, model);
      assert.equal((await ok.json()).choices[0].message.content, "Hello from chat-tiny!");
    }
    const emb = await fetch(`${server.url}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "embed-tiny", input: "hello" }),
    });
    assert.equal(emb.status, 200);
    await emb.body?.cancel();
  } finally {
    const status = await server.stop();
    await Deno.remove(models, { recursive: true });
    assert.equal(status.code, 0, server.log().slice(-2000));
  }
});
