// Client matrix, Anthropic's official SDK (`@anthropic-ai/sdk`) against the Messages API: messages.create with
// usage, messages.stream with finalMessage(), a tool the client runs before the model answers, countTokens,
// a thinking model's thinking blocks, and models.list.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import {
  HELLO,
  HI,
  hiPromptTokens,
  SUNNY,
  THINKING,
  WEATHER_DESCRIPTION,
  WEATHER_Q,
  WEATHER_RESULT,
  withServer,
} from "./support.ts";

const WEATHER = {
  name: "get_weather",
  description: WEATHER_DESCRIPTION,
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};

Deno.test("client matrix: @anthropic-ai/sdk", async (t) => {
  await withServer(async (s) => {
    const client = new Anthropic({ baseURL: s.url, apiKey: "sk-test", maxRetries: 0 });
    const prompt = await hiPromptTokens();

    await t.step("messages.create with usage", async () => {
      const m = await client.messages.create({
        model: "chat-tiny",
        max_tokens: 64,
        messages: [{ role: "user", content: HI }],
      });
      assert.deepEqual(m.content, [{ type: "text", text: HELLO }]);
      assert.equal(m.stop_reason, "end_turn");
      assert.equal(m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0), prompt);
      assert.equal(m.usage.output_tokens, 6);
    });

    await t.step("messages.stream with finalMessage()", async () => {
      const stream = client.messages.stream({
        model: "chat-tiny",
        max_tokens: 64,
        messages: [{ role: "user", content: HI }],
      });
      let text = "";
      stream.on("text", (d) => text += d);
      const m = await stream.finalMessage();
      assert.equal(text, HELLO);
      assert.equal(m.content[0].type === "text" && m.content[0].text, HELLO);
      assert.equal(m.usage.output_tokens, 6);
    });

    await t.step("tool use: the client runs the tool, the model answers", async () => {
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: WEATHER_Q }];
      const first = await client.messages.create({
        model: "chat-tiny",
        max_tokens: 64,
        tools: [WEATHER],
        messages,
      });
      assert.equal(first.stop_reason, "tool_use");
      const use = first.content.find((b) => b.type === "tool_use")!;
      assert.equal(use.type === "tool_use" && use.name, "get_weather");
      assert.deepEqual(use.type === "tool_use" && use.input, { city: "Paris" });
      messages.push({ role: "assistant", content: first.content });
      messages.push({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: use.id, content: WEATHER_RESULT }],
      });
      const answer = await client.messages.create({
        model: "chat-tiny",
        max_tokens: 64,
        tools: [WEATHER],
        messages,
      });
      assert.deepEqual(answer.content, [{ type: "text", text: SUNNY }]);
    });

    await t.step("countTokens", async () => {
      const n = await client.messages.countTokens({
        model: "chat-tiny",
        messages: [{ role: "user", content: HI }],
      });
      assert.equal(n.input_tokens, prompt);
    });

    await t.step("thinking blocks", async () => {
      const m = await client.messages.create({
        model: "think-tiny",
        max_tokens: 2048,
        thinking: { type: "enabled", budget_tokens: 1024 },
        messages: [{ role: "user", content: HI }],
      });
      assert.equal(m.content[0].type, "thinking");
      assert.equal(m.content[0].type === "thinking" && m.content[0].thinking, THINKING.reasoning);
    });

    await t.step("models.list", async () => {
      const ids: string[] = [];
      for await (const m of client.models.list()) ids.push(m.id);
      assert.ok(ids.includes("chat-tiny") && ids.includes("think-tiny"), ids.join());
    });
  });
});
