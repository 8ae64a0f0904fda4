// Client matrix, Vercel AI SDK with `@ai-sdk/anthropic` against the Messages API: generateText with usage,
// streamText, and a tool the SDK runs itself before the model answers.
import assert from "node:assert/strict";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { z } from "zod";
import {
  HELLO,
  HI,
  hiPromptTokens,
  SUNNY,
  WEATHER_DESCRIPTION,
  WEATHER_Q,
  WEATHER_RESULT,
  withServer,
} from "./support.ts";

Deno.test("client matrix: @ai-sdk/anthropic", async (t) => {
  await withServer(async (s) => {
    const anthropic = createAnthropic({ baseURL: `${s.url}/v1`, apiKey: "sk-test" });

    await t.step("generateText with usage", async () => {
      const r = await generateText({
        model: anthropic("chat-tiny"),
        prompt: HI,
        maxRetries: 0,
        maxOutputTokens: 64,
      });
      assert.equal(r.text, HELLO);
      assert.equal(r.finishReason, "stop");
      assert.equal(r.usage.inputTokens, await hiPromptTokens());
      assert.equal(r.usage.outputTokens, 6);
    });

    await t.step("streamText", async () => {
      const r = streamText({ model: anthropic("chat-tiny"), prompt: HI, maxRetries: 0, maxOutputTokens: 64 });
      let text = "";
      for await (const d of r.textStream) text += d;
      assert.equal(text, HELLO);
      assert.equal(await r.finishReason, "stop");
    });

    await t.step("a tool the SDK runs, then the answer", async () => {
      const calls: unknown[] = [];
      const r = await generateText({
        model: anthropic("chat-tiny"),
        prompt: WEATHER_Q,
        maxRetries: 0,
        maxOutputTokens: 64,
        stopWhen: stepCountIs(3),
        tools: {
          get_weather: tool({
            description: WEATHER_DESCRIPTION,
            inputSchema: z.object({ city: z.string() }),
            execute: (input) => (calls.push(input), Promise.resolve(JSON.parse(WEATHER_RESULT))),
          }),
        },
      });
      assert.deepEqual(calls, [{ city: "Paris" }]);
      assert.equal(r.text, SUNNY);
      assert.equal(r.steps.length, 2);
    });
  });
});
