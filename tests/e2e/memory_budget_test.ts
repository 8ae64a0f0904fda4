// Tests the memory budget across the worker boundary: with a budget that holds only the whisper test
// model or the two small chat-tiny and embed-tiny models, concurrent chat, embedding and transcription requests keep forcing
// one model out for another. Every request must still get its exact answer: never a 500 or 503 from an engine
// unloaded between the request's lookup and its use (while the audio is decoded, the text tokenized, or the
// request waits for its queue slot), and the unloads must really happen.
import assert from "node:assert/strict";
import { join } from "node:path";
import { toFile } from "openai";
import { MODELS_DIR, REPO_ROOT, startTestServer } from "../helpers.ts";
import { sizeOnDisk } from "../../src/engines/registry.ts";

const HELLO = "Hello from chat-tiny!";

Deno.test("memory budget: chat and embeddings evict each other's workers under concurrent load", async () => {
  const chatBytes = await sizeOnDisk(join(MODELS_DIR, "generated/chat-tiny"));
  const embedBytes = await sizeOnDisk(join(MODELS_DIR, "generated/embed-tiny"));
  const whisperBytes = await sizeOnDisk(join(MODELS_DIR, "generated/whisper-tiny-test"));
  // Room for the whisper model (the largest) alone, or for the two small ones: each side evicts the other.
  const budget = Math.max(whisperBytes, chatBytes + embedBytes) + 1;
  assert.ok(budget < whisperBytes + Math.min(chatBytes, embedBytes));
  const mp3 = await Deno.readFile(join(REPO_ROOT, "tests", "fixtures", "audio", "speech.mp3"));
  const t = await startTestServer({ flags: [`--memory-budget=${budget}`, "--queue-size=64"] });
  try {
    const reference = (await t.client.embeddings.create({ model: "embed-tiny", input: "the cat" })).data[0]
      .embedding;
    const chat = () =>
      t.client.chat.completions.create({
        model: "chat-tiny",
        messages: [{ role: "user", content: "Say hello" }],
      }).then((r) => assert.equal(r.choices[0].message.content, HELLO));
    const transcribe = async () => {
      const file = await toFile(mp3, "speech.mp3", { type: "audio/mpeg" });
      const r = await t.client.audio.transcriptions.create({ file, model: "whisper-tiny-test" });
      assert.equal(r.text, sentence);
    };
    const sentence = (await t.client.audio.transcriptions.create({
      file: await toFile(mp3, "speech.mp3", { type: "audio/mpeg" }),
      model: "whisper-tiny-test",
    })).text;
    const embed = () =>
      t.client.embeddings.create({ model: "embed-tiny", input: "the cat" }).then((r) =>
        assert.deepEqual(r.data[0].embedding, reference)
      );
    // One model after the other: each load has to evict the other model's worker.
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
  } finally {
    await t.close();
  }
});
