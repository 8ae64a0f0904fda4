// Client matrix, LangChain JS with `@langchain/anthropic` (ChatAnthropic) against the Messages API: invoke with
// usage, stream, and bindTools.
import assert from "node:assert/strict";
import { ChatAnthropic } from "@langchain/anthropic";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { HELLO, HI, hiPromptTokens, WEATHER_DESCRIPTION, WEATHER_Q, withServer } from "./support.ts";

const weather = tool((input: { city: string }) => `sunny in ${input.city}`, {
  name: "get_weather",
  description: WEATHER_DESCRIPTION,
  schema: z.object({ city: z.string() }),
});

Deno.test("client matrix: @langchain/anthropic", async (t) => {
  await withServer(async (s) => {
    const llm = new ChatAnthropic({
      model: "chat-tiny",
      apiKey: "sk-test",
      anthropicApiUrl: s.url,
      maxRetries: 0,
      maxTokens: 64,
    });

    await t.step("invoke with usage", async () => {
      const m = await llm.invoke(HI);
      assert.equal(m.content, HELLO);
      assert.equal(m.usage_metadata?.input_tokens, await hiPromptTokens());
      assert.equal(m.usage_metadata?.output_tokens, 6);
    });

    await t.step("stream", async () => {
      let text = "";
      for await (const chunk of await llm.stream(HI)) {
        text += typeof chunk.content === "string" ? chunk.content : "";
      }
      assert.equal(text, HELLO);
    });

    await t.step("bindTools", async () => {
      const m = await llm.bindTools([weather]).invoke(WEATHER_Q);
      assert.equal(m.tool_calls?.length, 1);
      assert.equal(m.tool_calls![0].name, "get_weather");
      assert.deepEqual(m.tool_calls![0].args, { city: "Paris" });
    });
  });
});
