// Owns what the client-matrix tests (tests/clients/) share: one real server with the generated models
// (chat-tiny, think-tiny, embed-tiny, whisper-tiny-test) on port 0, the exact replies those models give, the
// reference embedding as the official SDK gets it.
import assert from "node:assert/strict";
import { GENERATED_MODELS, startTestServer, type TestServer } from "../helpers.ts";
import { promptTokens } from "../support/chat_tiny_tokens.ts";
import { THINK_REPLIES } from "../../tools/models/think_tiny.ts";

export const HI = "Hi there!";
export const HELLO = "Hello from chat-tiny!";
export const WEATHER_Q = "What's the weather in Paris?";
export const SUNNY = "It is sunny in Paris.";
export const WEATHER_DESCRIPTION = "Get the current weather for a city";
export const THINKING = THINK_REPLIES.default;
/** What the weather tool returns to the model in every client's loop. */
export const WEATHER_RESULT = '{"sky": "sunny"}';

/** Prompt tokens of "Hi there!" as one user message under chat-tiny's template. */
export const hiPromptTokens = () => promptTokens([{ role: "user", content: HI }]);

export async function withServer(fn: (s: TestServer) => Promise<void>): Promise<void> {
  const s = await startTestServer({
    manifest: {
      ...GENERATED_MODELS,
      models: {
        ...GENERATED_MODELS.models,
        "think-tiny": { task: "chat", path: "generated/think-tiny", dtype: "fp32", device: "cpu" },
      },
    },
  });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

/** embed-tiny's vector for `text` through the official SDK: what every other client must get. */
export async function referenceEmbedding(s: TestServer, text: string): Promise<number[]> {
  const r = await s.client.embeddings.create({ model: "embed-tiny", input: text, encoding_format: "float" });
  return r.data[0].embedding;
}

/** Equal as float32 values (a client may ask for base64, which carries the float32 bits exactly). */
export function assertSameVector(actual: number[], expected: number[]): void {
  assert.equal(actual.length, expected.length);
  assert.deepEqual(actual.map(Math.fround), expected.map(Math.fround));
}
