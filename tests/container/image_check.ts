// Checks a running container of the server's image (started by .ci/image.sh with the generated models mounted
// as its models volume): /health, a chat through the official `openai` client, an embedding and a
// transcription, each with the exact answer the generated models give, and that the server runs as the
// image's non-root user; for the Vulkan image, that the GGUF model runs on the Vulkan device (Mesa's llvmpipe in
// CI), eight streams at once. Usage: deno run -A tests/container/image_check.ts <base url> <container uid> [vulkan]
import assert from "node:assert/strict";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { REPO_ROOT } from "../helpers.ts";

const [url, uid, variant] = Deno.args;
if (!url || !uid) throw new Error("usage: image_check.ts <base url> <uid the server runs as>");
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-test", maxRetries: 0, timeout: 300_000 });

const health = await fetch(`${url}/health`);
assert.equal(health.status, 200, "health");
assert.deepEqual(await health.json(), { status: "ok" });

const chat = await client.chat.completions.create({
  model: "chat-tiny",
  messages: [{ role: "user", content: "Hi there!" }],
});
assert.equal(chat.choices[0].message.content, "Hello from chat-tiny!");

const gguf = await client.chat.completions.create({
  model: "chat-gguf",
  messages: [{ role: "user", content: "Hi there!" }],
});
assert.equal(gguf.choices[0].message.content, "Hello from chat-tiny!");

const emb = await client.embeddings.create({ model: "embed-tiny", input: ["the quick brown fox", "hello"] });
assert.equal(emb.data.length, 2);
const norm = Math.hypot(...emb.data[0].embedding);
assert.ok(Math.abs(norm - 1) < 1e-4, `normalized: ${norm}`);

// The generated whisper model writes this sentence for any audio of at least 2 s (tools/models/whisper_tiny.ts).
const wav = await Deno.readFile(join(REPO_ROOT, "tests/fixtures/audio/speech.wav"));
const tr = await client.audio.transcriptions.create({
  model: "whisper-tiny-test",
  file: await toFile(wav, "speech.wav", { type: "audio/wav" }),
});
assert.equal(tr.text, "The quick brown fox jumps over the lazy dog.");
// A compressed upload goes through the image's ffmpeg.
const mp3 = await Deno.readFile(join(REPO_ROOT, "tests/fixtures/audio/speech.mp3"));
const tr2 = await client.audio.transcriptions.create({
  model: "whisper-tiny-test",
  file: await toFile(mp3, "speech.mp3", { type: "audio/mpeg" }),
});
assert.equal(tr2.text, tr.text);

const models = await (await fetch(`${url}/v1/models`)).json() as { data: { id: string; device?: string }[] };
const device = models.data.find((m) => m.id === "chat-gguf")?.device ?? "";
if (variant === "vulkan") {
  assert.match(device, /^Vulkan0 \(llvmpipe/, `the GGUF model runs on ${device}`);
  // Eight streams decoded together: the batched load under which Debian 12's own lavapipe corrupted its heap
  // (the image takes Mesa 25 from bookworm-backports).
  const replies = await Promise.all(Array.from({ length: 8 }, async () => {
    const stream = await client.chat.completions.create({
      model: "chat-gguf",
      messages: [{ role: "user", content: "Hi there!" }],
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    return text;
  }));
  assert.deepEqual(replies, Array(8).fill("Hello from chat-tiny!"));
} else assert.equal(device, "CPU");

assert.notEqual(uid, "0", "the server must not run as root");
console.log(`image check passed: chat, GGUF chat on ${device}, embeddings, transcription as uid ${uid}`);
