// Client matrix, Vercel AI SDK (`ai`): `@ai-sdk/openai` in its default Responses mode and its `.chat()`
// mode, and `@ai-sdk/openai-compatible`, each through generateText (with usage), streamText, generateObject,
// a tool the SDK runs itself before the model answers, embed, and a thinking model's reasoning.
import assert from "node:assert/strict";
import {
  embed,
  type EmbeddingModel,
  generateObject,
  generateText,
  type JSONValue,
  type LanguageModel,
  stepCountIs,
  streamText,
  tool,
} from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { z } from "zod";
import {
  assertSameVector,
  HELLO,
  HI,
  hiPromptTokens,
  referenceEmbedding,
  SUNNY,
  THINKING,
  WEATHER_DESCRIPTION,
  WEATHER_Q,
  WEATHER_RESULT,
  withServer,
} from "./support.ts";

// The SDK prints a deprecation notice for generateObject (the matrix asks for it by name).
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

interface Provider {
  name: string;
  /** How a call asks this provider for a thinking model's reasoning; null: the provider never reads it (OpenAI's
   * chat completions have no reasoning field, so `@ai-sdk/openai`'s chat mode drops `reasoning_content`). */
  reasoning: Record<string, Record<string, JSONValue>> | null;
  chat(model: string): LanguageModel;
  embedding(model: string): EmbeddingModel;
}

function providers(baseURL: string): Provider[] {
  const openai = createOpenAI({ baseURL, apiKey: "sk-test" });
  const compatible = createOpenAICompatible({
    name: "local",
    baseURL,
    apiKey: "sk-test",
    includeUsage: true,
    supportsStructuredOutputs: true,
  });
  return [
    {
      name: "@ai-sdk/openai (Responses)",
      // The provider reads reasoning summaries, and asks for them only of models it knows to reason.
      reasoning: { openai: { forceReasoning: true, reasoningSummary: "auto" } },
      chat: (m) => openai(m),
      embedding: (m) => openai.embedding(m),
    },
    {
      name: "@ai-sdk/openai .chat()",
      reasoning: null,
      chat: (m) => openai.chat(m),
      embedding: (m) => openai.embedding(m),
    },
    {
      name: "@ai-sdk/openai-compatible",
      reasoning: {},
      chat: (m) => compatible(m),
      embedding: (m) => compatible.textEmbeddingModel(m),
    },
  ];
}

Deno.test("client matrix: Vercel AI SDK", async (t) => {
  await withServer(async (s) => {
    for (const p of providers(`${s.url}/v1`)) {
      await t.step(`${p.name}: generateText with usage`, async () => {
        const r = await generateText({ model: p.chat("chat-tiny"), prompt: HI, maxRetries: 0 });
        assert.equal(r.text, HELLO);
        assert.equal(r.finishReason, "stop");
        assert.equal(r.usage.inputTokens, await hiPromptTokens());
        assert.equal(r.usage.outputTokens, 6);
      });

      await t.step(`${p.name}: streamText`, async () => {
        const r = streamText({ model: p.chat("chat-tiny"), prompt: HI, maxRetries: 0 });
        let text = "";
        let parts = 0;
        for await (const d of r.textStream) text += d, parts++;
        assert.equal(text, HELLO);
        assert.ok(parts >= 5, "streamed token by token");
        assert.equal((await r.usage).outputTokens, 6);
      });

      await t.step(`${p.name}: generateObject`, async () => {
        const r = await generateObject({
          model: p.chat("chat-tiny"),
          schema: z.object({ answer: z.enum(["yes", "no"]) }),
          prompt: HI,
          maxRetries: 0,
        });
        assert.ok(["yes", "no"].includes(r.object.answer));
        assert.equal(r.finishReason, "stop");
      });

      await t.step(`${p.name}: a tool call, run by the SDK, then the answer`, async () => {
        const calls: unknown[] = [];
        const r = await generateText({
          model: p.chat("chat-tiny"),
          prompt: WEATHER_Q,
          tools: {
            get_weather: tool({
              description: WEATHER_DESCRIPTION,
              inputSchema: z.object({ city: z.string() }),
              execute: (input) => (calls.push(input), Promise.resolve(JSON.parse(WEATHER_RESULT))),
            }),
          },
          stopWhen: stepCountIs(3),
          maxRetries: 0,
        });
        assert.deepEqual(calls, [{ city: "Paris" }]);
        assert.deepEqual(r.steps.map((st) => st.finishReason), ["tool-calls", "stop"]);
        assert.equal(r.text, SUNNY);
      });

      await t.step(`${p.name}: embed`, async () => {
        const r = await embed({ model: p.embedding("embed-tiny"), value: "hello", maxRetries: 0 });
        assertSameVector(r.embedding, await referenceEmbedding(s, "hello"));
      });

      await t.step(`${p.name}: a thinking model's reasoning apart from its text`, async () => {
        const r = await generateText({
          model: p.chat("think-tiny"),
          prompt: HI,
          maxRetries: 0,
          ...(p.reasoning ? { providerOptions: p.reasoning } : {}),
        });
        assert.equal(r.text, THINKING.answer);
        assert.equal(r.reasoningText, p.reasoning ? THINKING.reasoning : undefined);
      });
    }
  });
});
