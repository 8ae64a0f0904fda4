// Least privilege: the server started with exactly the scoped permissions `deno task start` runs it with (read
// from deno.json, so the documented command line is the tested one) serves chat, embeddings and transcription.
// Only the test's own data folders are added to the read list. The Responses store uses its default place.
import assert from "node:assert/strict";
import { join } from "node:path";
import { GENERATED_MODELS, REPO_ROOT, SHARED_DIR, spawnServer, startTestServer } from "../helpers.ts";

const tasks = JSON.parse(await Deno.readTextFile(join(REPO_ROOT, "deno.json"))).tasks;
// `start` sets up the native libraries when missing, then runs the server with `serve` (the container image
// runs `serve` alone).
assert.equal((tasks.start as string).split("; ").at(-1), "deno task serve");
const task: string = tasks.serve;

Deno.test("permissions: the default start is the scoped one; all permissions are opt-in, named as such", () => {
  assert.match(task, /^deno run --allow-net=\S+ .* main\.ts$/);
  assert.equal(tasks["start:secure"], undefined);
  assert.match(tasks["start:all-permissions"], /deno run -A main\.ts$/);
});

/** The permission flags of the task, with `extraRead` appended to its --allow-read list. */
function permissionFlags(extraRead: string[]): string[] {
  const flags = task.replace(/^deno run /, "").replace(/ main\.ts$/, "").split(" ");
  assert.ok(!flags.includes("-A") && !flags.includes("--allow-all"), "start must not allow all");
  return flags.map((f) => f.startsWith("--allow-read=") ? `${f},${extraRead.join(",")}` : f);
}

Deno.test("permissions: the scoped command line serves chat, responses, embeddings and transcription", async () => {
  const tmp = await Deno.makeTempDir();
  // chat-tiny on `auto` probes for a WebGPU adapter, where Mesa used to complain about XDG_RUNTIME_DIR when it
  // is unset (as under a service manager); empty here stands for unset, which Mesa treats the same.
  const manifest = {
    ...GENERATED_MODELS,
    models: {
      ...GENERATED_MODELS.models,
      "chat-tiny": { ...GENERATED_MODELS.models["chat-tiny"], device: "auto" as const },
      // A GroupQueryAttention model: the in-place decoder on onnxruntime's C API (through native/ort_shim.c),
      // which the scoped --allow-ffi must allow, not a silent fallback to transformers.js.
      "chat-gqa": {
        task: "chat" as const,
        path: "generated/chat-tiny-gqa-packed",
        dtype: "q4",
        device: "cpu" as const,
      },
    },
  };
  const server = await spawnServer({
    denoFlags: permissionFlags([tmp, Deno.env.get("TMPDIR") ?? "/tmp"]),
    manifest,
    env: { XDG_RUNTIME_DIR: "" },
  });
  try {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    };
    const chat = await post("/v1/chat/completions", {
      model: "chat-tiny",
      messages: [{ role: "user", content: "Hi there!" }],
    });
    assert.equal(chat.status, 200, JSON.stringify(chat.json));
    assert.equal(chat.json.choices[0].message.content, "Hello from chat-tiny!");

    const gqa = await post("/v1/chat/completions", {
      model: "chat-gqa",
      messages: [{ role: "user", content: "Hi there!" }],
    });
    assert.equal(gqa.status, 200, JSON.stringify(gqa.json));
    assert.equal(gqa.json.choices[0].message.content, "Hello from chat-tiny!");
    const loaded = server.log().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
      .find((l) => l.msg === "model loaded" && l.model === "chat-gqa");
    assert.match(loaded?.backend ?? "", /onnxruntime's C API/, server.log());

    // The Responses store writes its SQLite file in the data folder the scoped command line allows.
    const created = await post("/v1/responses", { model: "chat-tiny", input: "Hi there!" });
    assert.equal(created.status, 200, JSON.stringify(created.json));
    const got = await fetch(`${server.url}/v1/responses/${created.json.id}`);
    assert.equal((await got.json()).output[0].content[0].text, "Hello from chat-tiny!");

    const emb = await post("/v1/embeddings", { model: "embed-tiny", input: "hello" });
    assert.equal(emb.status, 200, JSON.stringify(emb.json));
    // The scoped process computes what an all-permissions one does, not merely a 200.
    const full = await startTestServer();
    try {
      const reference = await full.client.embeddings.create({ model: "embed-tiny", input: "hello" });
      assert.deepEqual(emb.json.data[0].embedding, reference.data[0].embedding);
      assert.deepEqual(emb.json.usage, reference.usage);
    } finally {
      await full.close();
    }

    const form = new FormData();
    const wav = await Deno.readFile(join(SHARED_DIR, "data", "whisper", "jfk.wav"));
    form.set("file", new Blob([wav]), "jfk.wav");
    form.set("model", "whisper-1");
    const res = await fetch(`${server.url}/v1/audio/transcriptions`, { method: "POST", body: form });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    // whisper-1 is the generated whisper-tiny-test here, which writes its planted sentence.
    assert.equal(JSON.parse(text).text, "The quick brown fox jumps over the lazy dog.");
  } finally {
    const status = await server.stop();
    await Deno.remove(tmp, { recursive: true });
    assert.equal(status.code, 0);
    assert.ok(!server.log().includes("XDG_RUNTIME_DIR"), "no Mesa start-up noise");
  }
});
