// Client matrix, OpenAI Agents SDK (`@openai/agents`): an agent with one function tool run to its final
// output, on the Responses API (the SDK's default) and on chat completions.
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  Agent,
  OpenAIChatCompletionsModel,
  run,
  setDefaultOpenAIClient,
  setTracingDisabled,
  tool,
} from "@openai/agents";
import { z } from "zod";
import { SUNNY, WEATHER_DESCRIPTION, WEATHER_Q, WEATHER_RESULT, withServer } from "./support.ts";

// Tracing would upload spans to OpenAI; nothing here may leave the machine.
setTracingDisabled(true);

Deno.test("client matrix: OpenAI Agents SDK", async (t) => {
  await withServer(async (s) => {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "sk-test", maxRetries: 0 });
    setDefaultOpenAIClient(client);
    const models = {
      "Responses (default)": "chat-tiny",
      "chat completions": new OpenAIChatCompletionsModel(client, "chat-tiny"),
    };
    for (const [mode, model] of Object.entries(models)) {
      await t.step(`an agent with one function tool, run to its final output (${mode})`, async () => {
        const calls: unknown[] = [];
        const getWeather = tool({
          name: "get_weather",
          description: WEATHER_DESCRIPTION,
          parameters: z.object({ city: z.string() }),
          execute: (input) => (calls.push(input), Promise.resolve(WEATHER_RESULT)),
        });
        const agent = new Agent({
          name: "Weather",
          instructions: "Answer weather questions.",
          model,
          tools: [getWeather],
        });
        const r = await run(agent, WEATHER_Q);
        assert.deepEqual(calls, [{ city: "Paris" }]);
        assert.equal(r.finalOutput, SUNNY);
        assert.deepEqual(r.newItems.map((i) => i.type), [
          "tool_call_item",
          "tool_call_output_item",
          "message_output_item",
        ]);
      });
    }
  });
});
