// Tests the memory budget across the worker boundary with what models really hold. A first server, without a
// budget, reports through /metrics what each model holds once used: the weights it loaded (one dtype, not
// every file of its folder) plus its caches and states (chat-tiny's prompt cache, whisper's state). A second
// server gets a budget that holds the whisper model alone, or the two small chat-tiny and embed-tiny models:
// counted by their files, all three would fit and nothing would ever be unloaded. Concurrent chat, embedding
// and transcription requests then keep forcing one model out for another, and every request must still get
// its exact answer: never a 500 or 503 from an engine unloaded between the request's lookup and its use
// (while the audio is decoded, the text tokenized, or the request waits for its queue slot).
import assert from "node:assert/strict";
import { join } from "node:path";
import { toFile } from "openai";
import { MODELS_DIR, REPO_ROOT, startTestServer, type TestServer } from "../helpers.ts";

const HELLO = "Hello from chat-tiny!";

async function heldBytes(t: TestServer): Promise<Record<string, number>> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const held: Record<string, number> = {};
  for (const m of text.matchAll(/^oai_model_memory_bytes\{model="([^"]+)"\} (\d+)$/gm)) {
    held[m[1]] = Number(m[2]);
  }
  return held;
}

const size = (path: string) => Deno.statSync(join(MODELS_DIR, "generated", path)).size;

Deno.test("memory budget: counts what models hold; chat and embeddings evict each other under concurrent load", async () => {
  const mp3 = await Deno.readFile(join(REPO_ROOT, "tests", "fixtures", "audio", "speech.mp3"));
  const requests = (t: TestServer) => {
    let sentence = "";
    let reference: number[] = [];
    return {
      async setUp() {
        reference = (await t.client.embeddings.create({ model: "embed-tiny", input: "the cat" })).data[0]
          .embedding;
        sentence = (await t.client.audio.transcriptions.create({
          file: await toFile(mp3, "speech.mp3", { type: "audio/mpeg" }),
          model: "whisper-tiny-test",
        })).text;
      },
      chat: () =>
        t.client.chat.completions.create({
          model: "chat-tiny",
          messages: [{ role: "user", content: "Say hello" }],
        }).then((r) => assert.equal(r.choices[0].message.content, HELLO)),
      transcribe: async () => {
        const file = await toFile(mp3, "speech.mp3", { type: "audio/mpeg" });
        const r = await t.client.audio.transcriptions.create({ file, model: "whisper-tiny-test" });
        assert.equal(r.text, sentence);
      },
      embed: () =>
        t.client.embeddings.create({ model: "embed-tiny", input: "the cat" }).then((r) =>
          assert.deepEqual(r.data[0].embedding, reference)
        ),
    };
  };

  // What each model holds once used, with no budget in the way.
  const free = await startTestServer();
  let held: Record<string, number>;
  try {
    const r = requests(free);
    await r.setUp();
    await r.chat();
    held = await heldBytes(free);
  } finally {
    await free.close();
  }
  const chatGraph = size("chat-tiny/onnx/model.onnx");
  // chat-tiny: its fp32 graph and the KV cache its conversation left as the prompt cache (1 KiB per token),
  // not its q4 and int8 graphs nor its GGUF exports.
  assert.ok(
    held["chat-tiny"] > chatGraph && held["chat-tiny"] < chatGraph + 64 * 1024,
    `${held["chat-tiny"]}`,
  );
  assert.equal(held["embed-tiny"], size("embed-tiny/onnx/model.onnx"));
  // whisper: its weights as allocated and the state of a transcription (KV caches, compute buffers), which
  // together are far more than the file.
  const whisperFile = size("whisper-tiny-test/ggml-model.bin");
  assert.ok(held["whisper-tiny-test"] > 1.5 * whisperFile, `${held["whisper-tiny-test"]} vs ${whisperFile}`);

  // Room for the whisper model alone, or for the two small ones: each side evicts the other.
  const small = Math.min(held["chat-tiny"], held["embed-tiny"]);
  const budget = held["whisper-tiny-test"] + small - 1;
  assert.ok(budget >= held["chat-tiny"] + held["embed-tiny"]);
  const t = await startTestServer({ flags: [`--memory-budget=${budget}`, "--queue-size=64"] });
  try {
    const { setUp, chat, embed, transcribe } = requests(t);
    await setUp();
    // One model after the other: each load has to evict the other models' workers.
    for (let round = 0; round < 3; round++) {
      await Promise.all([chat(), chat()]);
      await Promise.all([embed(), embed()]);
      await Promise.all([transcribe(), transcribe()]);
    }
    // Staggered arrivals: requests for one model land while the other is being evicted, loaded or used, so
    // an engine can go idle (and be unloaded) between a request's lookup and its use.
    for (let round = 0; round < 4; round++) {
      const started: Promise<void>[] = [];
      for (let i = 0; i < 8; i++) {
        started.push([chat, embed, transcribe][(i + round) % 3]());
        await new Promise((r) => setTimeout(r, 7 * ((i * 5 + round) % 4)));
      }
      const failed = (await Promise.allSettled(started)).filter((o) => o.status === "rejected");
      assert.deepEqual(failed, [], `round ${round}`);
    }
    const unloads = t.logs.map((l) => JSON.parse(l)).filter((l) =>
      l.msg === "model unloaded" && l.why === "memory budget"
    );
    assert.ok(unloads.length >= 4, `the budget forced unloads (${unloads.length})`);
    assert.deepEqual(t.records.filter((r) => r.status >= 500), []);
    // Once the last request has ended, what stays loaded fits the budget (the unloads run as requests end).
    let end = await heldBytes(t);
    for (let i = 0; i < 50 && Object.values(end).reduce((a, b) => a + b, 0) > budget; i++) {
      await new Promise((r) => setTimeout(r, 100));
      end = await heldBytes(t);
    }
    assert.ok(Object.values(end).reduce((a, b) => a + b, 0) <= budget, JSON.stringify(end));
  } finally {
    await t.close();
  }
});
