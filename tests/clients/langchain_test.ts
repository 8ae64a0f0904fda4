// Client matrix, LangChain JS (`@langchain/openai`): ChatOpenAI invoke (with usage), stream, bindTools,
// withStructuredOutput (json_schema and function calling), on chat completions and in its Responses mode,
// and OpenAIEmbeddings.
import assert from "node:assert/strict";
import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import {
  assertSameVector,
  HELLO,
  HI,
  hiPromptTokens,
  referenceEmbedding,
  WEATHER_DESCRIPTION,
  WEATHER_Q,
  withServer,
} from "./support.ts";

const weather = tool((input: { city: string }) => `sunny in ${input.city}`, {
  name: "get_weather",
  description: WEATHER_DESCRIPTION,
  schema: z.object({ city: z.string() }),
});
const YES_NO = z.object({ answer: z.enum(["yes", "no"]) });

Deno.test("client matrix: LangChain JS", async (t) => {
  await withServer(async (s) => {
    const configuration = { baseURL: `${s.url}/v1` };
    for (const responses of [false, true]) {
      const mode = responses ? "Responses API" : "chat completions";
      const llm = new ChatOpenAI({
        model: "chat-tiny",
        apiKey: "sk-test",
        configuration,
        maxRetries: 0,
        useResponsesApi: responses,
      });

      await t.step(`ChatOpenAI (${mode}): invoke with usage`, async () => {
        const m = await llm.invoke(HI);
        assert.equal(m.text, HELLO);
        assert.equal(m.usage_metadata!.input_tokens, await hiPromptTokens());
        assert.equal(m.usage_metadata!.output_tokens, 6);
      });

      await t.step(`ChatOpenAI (${mode}): stream`, async () => {
        let text = "";
        let chunks = 0;
        for await (const c of await llm.stream(HI)) text += c.text, chunks++;
        assert.equal(text, HELLO);
        assert.ok(chunks >= 5, "streamed token by token");
      });

      await t.step(`ChatOpenAI (${mode}): bindTools`, async () => {
        const m = await llm.bindTools([weather]).invoke(WEATHER_Q);
        assert.deepEqual(m.tool_calls!.map((c) => [c.name, c.args]), [["get_weather", { city: "Paris" }]]);
      });

      for (const method of ["jsonSchema", "functionCalling"] as const) {
        await t.step(`ChatOpenAI (${mode}): withStructuredOutput (${method})`, async () => {
          const r = await llm.withStructuredOutput(YES_NO, { name: "yes_no", method }).invoke(HI);
          assert.ok(["yes", "no"].includes(r.answer), JSON.stringify(r));
        });
      }
    }

    await t.step("OpenAIEmbeddings: embedQuery and embedDocuments", async () => {
      const emb = new OpenAIEmbeddings({
        model: "embed-tiny",
        apiKey: "sk-test",
        configuration,
        maxRetries: 0,
      });
      const [a, b] = await emb.embedDocuments(["hello", "world"]);
      assertSameVector(a, await referenceEmbedding(s, "hello"));
      assertSameVector(b, await referenceEmbedding(s, "world"));
      assertSameVector(await emb.embedQuery("hello"), await referenceEmbedding(s, "hello"));
    });
  });
});
