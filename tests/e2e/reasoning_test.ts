// End to end: a thinking model (think-tiny: chat-tiny's crafted decoder with a Qwen3-style template that
// thinks before every answer) through the official `openai` client, as ONNX (transformers.js) and as GGUF
// (llama.cpp): the block's text goes to `reasoning_content` / a Responses `reasoning` item and never to
// `content`, streamed as well as whole; `reasoning_tokens` counts the block exactly; effort `none` and
// `minimal` switch thinking off through the template; json_schema and a forced tool constrain only the
// answer after the block. think-tiny's replies are in tools/models/README.md.
import assert from "node:assert/strict";
import { WEATHER_TOOL } from "../support/tools.ts";
import { type TestServer, withExtraModels } from "../helpers.ts";
import { promptTokens } from "../support/chat_tiny_tokens.ts";
import { THINK_REPLIES } from "../../tools/models/think_tiny.ts";

const HI = [{ role: "user" as const, content: "Hi there!" }];
const WEATHER = [{ role: "user" as const, content: "What's the weather in Paris?" }];
const { reasoning: THOUGHT, answer: HELLO } = THINK_REPLIES.default;
/** `<think>`, "\nThe", " user", " s", "aid", " h", "ello", ".\n", `</think>`: the block's tokens. */
const THOUGHT_TOKENS = 9;
/** The block, "\n\n", the six answer tokens and <|im_end|>. */
const REPLY_TOKENS = THOUGHT_TOKENS + 1 + 6 + 1;
const SCHEMA = {
  type: "object",
  properties: { answer: { type: "string", enum: ["yes", "no"] } },
  required: ["answer"],
  additionalProperties: false,
};

/** A tool chat-tiny's words never call; its one argument is an enum, so a forced call closes in a few tokens
 * (a free string would be filled with whatever the model's reply chain makes of the mask, up to the budget). */
const LOOKUP_TOOL = {
  type: "function" as const,
  function: {
    name: "lookup",
    description: "Look something up",
    parameters: {
      type: "object",
      properties: { answer: { type: "string", enum: ["yes", "no"] } },
      required: ["answer"],
      additionalProperties: false,
    },
  },
};

const MODELS = {
  "think-tiny": {
    task: "chat" as const,
    path: "generated/think-tiny",
    dtype: "fp32",
    device: "cpu" as const,
  },
  "think-gguf": {
    task: "chat" as const,
    path: "generated/think-tiny/gguf/think-tiny-F32.gguf",
    device: "cpu" as const,
  },
};

const withServer = (fn: (s: TestServer) => Promise<void>) => withExtraModels(MODELS, fn);

/** The chat-completions fields the wire adds for reasoning models (not in the SDK's types). */
type Reasoned = { reasoning_content?: string };

Deno.test("reasoning e2e: think-tiny as ONNX and GGUF", async (t) => {
  await withServer(async (s) => {
    const answers: Record<string, unknown[]> = {};
    for (const model of Object.keys(MODELS)) {
      const seen: unknown[] = (answers[model] = []);

      await t.step(`${model}: reasoning_content apart from content, reasoning_tokens exact`, async () => {
        const r = await s.client.chat.completions.create({ model, messages: HI });
        const msg = r.choices[0].message as typeof r.choices[0]["message"] & Reasoned;
        assert.equal(msg.content, HELLO);
        assert.equal(msg.reasoning_content, THOUGHT);
        assert.equal(r.choices[0].finish_reason, "stop");
        assert.equal(r.usage!.prompt_tokens, await promptTokens(HI, undefined, { model: "think-tiny" }));
        assert.equal(r.usage!.completion_tokens, REPLY_TOKENS);
        assert.equal(r.usage!.completion_tokens_details!.reasoning_tokens, THOUGHT_TOKENS);
        seen.push(r.choices, r.usage);
      });

      await t.step(`${model}: streamed, reasoning deltas first and no tag anywhere`, async () => {
        const stream = await s.client.chat.completions.create({
          model,
          messages: HI,
          stream: true,
          stream_options: { include_usage: true },
        });
        let reasoning = "";
        let content = "";
        const order: string[] = [];
        let usage = null;
        for await (const chunk of stream) {
          if (chunk.usage) usage = chunk.usage;
          const delta = chunk.choices[0]?.delta as { content?: string | null } & Reasoned | undefined;
          if (delta?.reasoning_content) reasoning += delta.reasoning_content, order.push("r");
          if (delta?.content) content += delta.content, order.push("c");
        }
        assert.equal(reasoning, THOUGHT);
        assert.equal(content, HELLO);
        assert.ok(order.lastIndexOf("r") < order.indexOf("c"), order.join(""));
        assert.ok(order.filter((x) => x === "r").length >= 5, "reasoning streams token by token");
        assert.equal(usage!.completion_tokens_details!.reasoning_tokens, THOUGHT_TOKENS);
      });

      for (const effort of ["none", "minimal"] as const) {
        await t.step(`${model}: reasoning_effort ${effort} switches thinking off`, async () => {
          const r = await s.client.chat.completions.create({
            model,
            messages: HI,
            reasoning_effort: effort as "minimal",
          });
          const msg = r.choices[0].message as typeof r.choices[0]["message"] & Reasoned;
          assert.equal(msg.content, HELLO);
          assert.equal(msg.reasoning_content, undefined);
          // The template wrote the empty block into the prompt: 4 tokens more, none generated.
          assert.equal(
            r.usage!.prompt_tokens,
            await promptTokens(HI, undefined, { model: "think-tiny", thinking: false }),
          );
          assert.equal(
            r.usage!.prompt_tokens,
            (await promptTokens(HI, undefined, { model: "think-tiny" })) + 4,
          );
          assert.equal(r.usage!.completion_tokens, REPLY_TOKENS - THOUGHT_TOKENS - 1);
          assert.equal(r.usage!.completion_tokens_details!.reasoning_tokens, 0);
        });
      }

      await t.step(
        `${model}: json_schema constrains the answer after the block, not the thinking`,
        async () => {
          const r = await s.client.chat.completions.create({
            model,
            messages: HI,
            response_format: {
              type: "json_schema",
              json_schema: { name: "yn", strict: true, schema: SCHEMA },
            },
          });
          const msg = r.choices[0].message as typeof r.choices[0]["message"] & Reasoned;
          assert.equal(msg.reasoning_content, THOUGHT);
          const value = JSON.parse(msg.content!);
          assert.deepEqual(Object.keys(value), ["answer"]);
          assert.ok(["yes", "no"].includes(value.answer));
          assert.equal(r.usage!.completion_tokens_details!.reasoning_tokens, THOUGHT_TOKENS);
          seen.push(msg);
        },
      );

      await t.step(`${model}: tool calls after the block, chosen and forced`, async () => {
        const auto = await s.client.chat.completions.create({
          model,
          messages: WEATHER,
          tools: [WEATHER_TOOL],
        });
        const a = auto.choices[0].message as typeof auto.choices[0]["message"] & Reasoned;
        assert.equal(auto.choices[0].finish_reason, "tool_calls");
        assert.equal(a.reasoning_content, THINK_REPLIES.tool.reasoning);
        assert.equal(a.content, null);
        assert.deepEqual(a.tool_calls!.map((c) => c.type === "function" && c.function), [
          { name: "get_weather", arguments: '{"city": "Paris"}' },
        ]);
        // The call's result, sent back: thinking again, then the answer in words.
        const result = await s.client.chat.completions.create({
          model,
          tools: [WEATHER_TOOL],
          messages: [
            ...WEATHER,
            { role: "assistant", content: null, tool_calls: a.tool_calls },
            { role: "tool", tool_call_id: a.tool_calls![0].id, content: '{"sky": "sunny"}' },
          ],
        });
        const rm = result.choices[0].message as typeof result.choices[0]["message"] & Reasoned;
        assert.equal(rm.reasoning_content, THINK_REPLIES.tool_result.reasoning);
        assert.equal(rm.content, THINK_REPLIES.tool_result.answer);
        assert.equal(result.usage!.completion_tokens_details!.reasoning_tokens, 7);
        // A tool that does not mention the weather leaves think-tiny answering in words; forced, the call
        // still comes after the same thinking.
        const forced = await s.client.chat.completions.create({
          model,
          messages: HI,
          tools: [LOOKUP_TOOL],
          tool_choice: { type: "function", function: { name: "lookup" } },
          max_tokens: 64,
        });
        const f = forced.choices[0].message as typeof forced.choices[0]["message"] & Reasoned;
        assert.equal(f.reasoning_content, THOUGHT);
        assert.equal(f.content, null);
        assert.equal(f.tool_calls!.length, 1);
        const call = f.tool_calls![0];
        assert.ok(call.type === "function" && call.function.name === "lookup");
        const args = JSON.parse(call.function.arguments);
        assert.deepEqual(Object.keys(args), ["answer"]);
        assert.ok(["yes", "no"].includes(args.answer), call.function.arguments);
        assert.equal(forced.choices[0].finish_reason, "tool_calls");
        seen.push(a.tool_calls!.map((c) => c.type === "function" && c.function), call.function);
      });

      await t.step(`${model}: Responses, a reasoning item before the message, and effort none`, async () => {
        const r = await s.client.responses.create({ model, input: "Hi there!" });
        assert.deepEqual(r.output.map((o) => o.type), ["reasoning", "message"]);
        const item = r.output[0];
        assert.ok(item.type === "reasoning");
        assert.deepEqual(item.content, [{ type: "reasoning_text", text: THOUGHT }]);
        assert.equal(r.output_text, HELLO);
        assert.equal(r.usage!.output_tokens, REPLY_TOKENS);
        assert.equal(r.usage!.output_tokens_details.reasoning_tokens, THOUGHT_TOKENS);
        // The next turn continues it: the reasoning item stays out of the prompt, as the template drops it.
        const next = await s.client.responses.create({ model, input: "Again!", previous_response_id: r.id });
        assert.equal(next.output_text, HELLO);
        const history = [...HI, { role: "assistant", content: HELLO }, { role: "user", content: "Again!" }];
        assert.equal(
          next.usage!.input_tokens,
          await promptTokens(history, undefined, { model: "think-tiny" }),
        );

        // Asked for a summary, the item carries the reasoning itself as its one summary part.
        const summed = await s.client.responses.create({
          model,
          input: "Hi there!",
          reasoning: { summary: "auto" },
        });
        const summedItem = summed.output[0];
        assert.ok(summedItem.type === "reasoning");
        assert.deepEqual(summedItem.summary, [{ type: "summary_text", text: THOUGHT }]);
        assert.deepEqual(summedItem.content, [{ type: "reasoning_text", text: THOUGHT }]);
        assert.deepEqual(item.summary, [], "no summary unless asked");

        const off = await s.client.responses.create({
          model,
          input: "Hi there!",
          reasoning: { effort: "none" },
        });
        assert.deepEqual(off.output.map((o) => o.type), ["message"]);
        assert.equal(off.output_text, HELLO);
        assert.equal(off.usage!.output_tokens_details.reasoning_tokens, 0);
      });

      await t.step(`${model}: Responses streamed, reasoning_text events then output_text`, async () => {
        const stream = s.client.responses.stream({ model, input: "Hi there!" });
        const types: string[] = [];
        let thought = "";
        for await (const ev of stream) {
          types.push(ev.type);
          if (ev.type === "response.reasoning_text.delta") {
            assert.equal(ev.output_index, 0);
            thought += ev.delta;
          }
          if (ev.type === "response.reasoning_text.done") assert.equal(ev.text, THOUGHT);
          if (ev.type === "response.output_text.delta") assert.equal(ev.output_index, 1);
        }
        assert.equal(thought, THOUGHT);
        assert.ok(!types.some((x) => x.includes("summary")), "no summary events unless asked");
        const final = await stream.finalResponse();
        assert.equal(final.output_text, HELLO);
        const compact = types.filter((x, i) => x !== types[i - 1]);
        assert.deepEqual(compact, [
          "response.created",
          "response.in_progress",
          "response.output_item.added",
          "response.content_part.added",
          "response.reasoning_text.delta",
          "response.reasoning_text.done",
          "response.content_part.done",
          "response.output_item.done",
          "response.output_item.added",
          "response.content_part.added",
          "response.output_text.delta",
          "response.output_text.done",
          "response.content_part.done",
          "response.output_item.done",
          "response.completed",
        ]);
      });
    }

    await t.step(
      "Responses streamed with a summary: reasoning_summary events inside the reasoning item",
      async () => {
        const stream = s.client.responses.stream({
          model: "think-tiny",
          input: "Hi there!",
          reasoning: { summary: "detailed" },
        });
        const types: string[] = [];
        let summary = "";
        for await (const ev of stream) {
          types.push(ev.type);
          if (ev.type === "response.reasoning_summary_text.delta") {
            assert.equal(ev.summary_index, 0);
            summary += ev.delta;
          }
          if (ev.type === "response.reasoning_summary_part.done") {
            assert.deepEqual(ev.part, { type: "summary_text", text: THOUGHT });
          }
        }
        assert.equal(summary, THOUGHT);
        const first = types.indexOf("response.reasoning_summary_part.added");
        const last = types.indexOf("response.reasoning_summary_part.done");
        assert.ok(types.indexOf("response.output_item.added") < first && first < last);
        assert.ok(last < types.indexOf("response.output_item.done"));
        assert.equal(types.indexOf("response.reasoning_summary_text.done"), last - 1);
        const final = await stream.finalResponse();
        const item = final.output[0];
        assert.ok(item.type === "reasoning");
        assert.deepEqual(item.summary, [{ type: "summary_text", text: THOUGHT }]);
      },
    );

    await t.step("an unknown reasoning.summary is a 400 naming it", async () => {
      const res = await fetch(`${s.url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "think-tiny", input: "Hi", reasoning: { summary: "everything" } }),
      });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error.param, "reasoning.summary");
    });

    await t.step("the GGUF export answers exactly as the ONNX model", () => {
      assert.deepEqual(answers["think-gguf"], answers["think-tiny"]);
    });
  });
});
