// Owns the chat requests that exercise every pipeline feature on a model that answers exactly (chat-tiny and its
// GGUF exports): the end-to-end tests that compare two backends or two devices of one model send these to both.
import { WEATHER_TOOL } from "./tools.ts";

export const HI = [{ role: "user" as const, content: "Hi there!" }];
export const WEATHER = [{ role: "user" as const, content: "What's the weather in Paris?" }];
export const SCHEMA = {
  type: "object",
  properties: { answer: { type: "string" }, n: { type: "integer" } },
  required: ["answer", "n"],
  additionalProperties: false,
};

/** One request body (without `model`) per feature, by name. */
export const CHAT_FEATURES: Record<string, Record<string, unknown>> = {
  "default reply": { messages: HI },
  "stop sequence": { messages: HI, stop: ["from"] },
  "logprobs": { messages: HI, logprobs: true, top_logprobs: 3 },
  "n=2 with a seed": { messages: HI, n: 2, seed: 42, temperature: 1.5 },
  "tools, auto": { messages: WEATHER, tools: [WEATHER_TOOL] },
  "tools, forced": {
    messages: HI,
    tools: [WEATHER_TOOL],
    tool_choice: { type: "function", function: { name: "get_weather" } },
  },
  "json_schema": {
    messages: HI,
    response_format: { type: "json_schema", json_schema: { name: "out", schema: SCHEMA, strict: true } },
    max_tokens: 60,
  },
};
