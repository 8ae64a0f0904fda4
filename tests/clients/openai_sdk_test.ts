// Client matrix, official `openai` SDK: one pass over every surface it offers that this server answers
// (chat, chat streaming, responses create/stream/parse, legacy completions, embeddings, audio), with the
// generated models' exact replies. The deeper per-endpoint suites are in tests/e2e/.
import assert from "node:assert/strict";
import { join } from "node:path";
import { toFile } from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import { REPO_ROOT } from "../helpers.ts";
import { HELLO, HI, hiPromptTokens, referenceEmbedding, withServer } from "./support.ts";

Deno.test("client matrix: openai SDK", async (t) => {
  await withServer(async (s) => {
    const c = s.client;
    await t.step("chat.completions.create, plain and streamed", async () => {
      const r = await c.chat.completions.create({
        model: "chat-tiny",
        messages: [{ role: "user", content: HI }],
      });
      assert.equal(r.choices[0].message.content, HELLO);
      assert.equal(r.usage!.prompt_tokens, await hiPromptTokens());
      const stream = await c.chat.completions.create({
        model: "chat-tiny",
        messages: [{ role: "user", content: HI }],
        stream: true,
      });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      assert.equal(text, HELLO);
    });

    await t.step("responses.create, responses.stream, responses.parse", async () => {
      const r = await c.responses.create({ model: "chat-tiny", input: HI });
      assert.equal(r.output_text, HELLO);
      assert.equal(r.usage!.input_tokens, await hiPromptTokens());
      const stream = c.responses.stream({ model: "chat-tiny", input: HI });
      let deltas = "";
      stream.on("response.output_text.delta", (e) => (deltas += e.delta));
      assert.equal((await stream.finalResponse()).output_text, HELLO);
      assert.equal(deltas, HELLO);
      const parsed = await c.responses.parse({
        model: "chat-tiny",
        input: HI,
        text: { format: zodTextFormat(z.object({ answer: z.enum(["yes", "no"]) }), "yes_no") },
      });
      assert.ok(["yes", "no"].includes(parsed.output_parsed!.answer));
    });

    await t.step("completions.create (legacy)", async () => {
      const r = await c.completions.create({ model: "chat-tiny", prompt: "Hello", max_tokens: 8 });
      assert.equal(r.choices[0].text, " from chat-tiny!");
      assert.equal(r.choices[0].finish_reason, "stop");
    });

    await t.step("embeddings.create (base64 by default, decoded by the SDK)", async () => {
      const r = await c.embeddings.create({ model: "embed-tiny", input: "hello" });
      assert.deepEqual(r.data[0].embedding, (await referenceEmbedding(s, "hello")).map(Math.fround));
    });

    await t.step("audio.transcriptions.create", async () => {
      const wav = await Deno.readFile(join(REPO_ROOT, "tests", "fixtures", "audio", "speech.wav"));
      const r = await c.audio.transcriptions.create({
        model: "whisper-1",
        file: await toFile(wav, "speech.wav", { type: "audio/wav" }),
      });
      assert.equal(r.text, "The quick brown fox jumps over the lazy dog.");
    });
  });
});
