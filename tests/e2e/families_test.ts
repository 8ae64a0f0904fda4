// End to end (issue 30): playback models on the families' REAL tokenizers and chat templates
// (tools/models/playback.ts) write exactly what a model of each family writes; through the official `openai`
// client, JSON and streamed, the server must give the reasoning, the content and the calls of each reply, the
// prompt token count the real tokenizer gives, render tool turns back the family's way (the turn after a tool
// result plays back only if the prompt is token for token what the template and tokenizer make of it), force
// calls in the family's own layout, and answer in text under tool_choice "none".
import assert from "node:assert/strict";
import { join } from "node:path";
import type OpenAI from "openai";
import { MODELS_DIR, type TestServer, withExtraModels } from "../helpers.ts";
import type { Expect, Scenario } from "../../tools/models/playback.ts";
import { FAMILIES, TOOLS } from "../../tools/models/playback_families.ts";

/** Call-opening tokens of the families here (masked under tool_choice none). */
const OPENERS = ["<tool_call>", "[TOOL_CALLS]", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"];

type Played = Scenario & { promptTokens: number; replyTokens: number };

const MODELS = Object.fromEntries(
  FAMILIES.map((
    f,
  ) => [f.name, {
    task: "chat" as const,
    path: `generated/${f.name}/model.gguf`,
    device: "cpu" as const,
    options: { context_length: 2048 },
  }]),
);

async function scenarios(name: string): Promise<Played[]> {
  const j = JSON.parse(await Deno.readTextFile(join(MODELS_DIR, "generated", name, "playback.json")));
  return j.scenarios;
}

type Msg = {
  content: string | null;
  reasoning_content?: string;
  tool_calls?: OpenAI.ChatCompletionMessageToolCall[];
};

function checkMessage(m: Msg, want: Expect, label: string) {
  assert.equal(m.reasoning_content ?? "", want.reasoning ?? "", `${label}: reasoning`);
  assert.equal(m.content ?? "", want.content ?? "", `${label}: content`);
  const calls = (m.tool_calls ?? []).map((c) => {
    assert.equal(c.type, "function");
    assert.match(c.id, /^call_/);
    const f = (c as OpenAI.ChatCompletionMessageFunctionToolCall).function;
    return { name: f.name, arguments: JSON.parse(f.arguments) };
  });
  assert.deepEqual(calls, want.calls ?? [], `${label}: calls`);
}

function request(model: string, sc: Played): OpenAI.ChatCompletionCreateParamsNonStreaming {
  return {
    model,
    messages: sc.messages as OpenAI.ChatCompletionMessageParam[],
    temperature: 0,
    ...(sc.tools ? { tools: TOOLS } : {}),
  };
}

/** The scenario's conversation as Responses input items. */
function toResponsesInput(messages: Played["messages"]): OpenAI.Responses.ResponseInputItem[] {
  return messages.flatMap((m): OpenAI.Responses.ResponseInputItem[] => {
    if (m.role === "tool") {
      return [{ type: "function_call_output", call_id: m.tool_call_id, output: m.content }];
    }
    if (m.role === "assistant") {
      return (m.tool_calls ?? []).map((c) => ({
        type: "function_call" as const,
        call_id: c.id,
        name: c.function.name,
        arguments: c.function.arguments,
      }));
    }
    return [{ role: m.role, content: m.content }];
  });
}

const withServer = (fn: (s: TestServer) => Promise<void>) => withExtraModels(MODELS, fn);

Deno.test("families e2e: real tokenizers and templates, replies read the family's way", async (t) => {
  await withServer(async (s) => {
    for (const fam of FAMILIES) {
      const model = fam.name;
      for (const sc of (await scenarios(model)).filter((x) => x.id !== "none")) {
        const label = `${model} ${sc.id}`;
        await t.step(`${label}: JSON`, async () => {
          const r = await s.client.chat.completions.create(request(model, sc));
          assert.equal(
            r.usage?.prompt_tokens,
            sc.promptTokens,
            `${label}: prompt tokens (the real tokenizer's count)`,
          );
          assert.equal(r.usage?.completion_tokens, sc.replyTokens, `${label}: completion tokens`);
          checkMessage(r.choices[0].message as Msg, sc.expect, label);
          assert.equal(r.choices[0].finish_reason, sc.expect.calls?.length ? "tool_calls" : "stop");
        });
        await t.step(`${label}: Responses (reasoning item, function_call items, message)`, async () => {
          const r = await s.client.responses.create({
            model,
            input: toResponsesInput(sc.messages),
            temperature: 0,
            ...(sc.tools
              ? { tools: TOOLS.map((x) => ({ type: "function" as const, ...x.function, strict: false })) }
              : {}),
          });
          const reasoning = r.output.filter((o) => o.type === "reasoning")
            .flatMap((o) => (o as OpenAI.Responses.ResponseReasoningItem).content ?? [])
            .map((c) => c.text).join("");
          const calls = r.output.filter((o) => o.type === "function_call")
            .map((o) => o as OpenAI.Responses.ResponseFunctionToolCall)
            .map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) }));
          assert.equal(reasoning, sc.expect.reasoning ?? "", `${label}: reasoning item`);
          assert.equal(r.output_text, sc.expect.content ?? "", `${label}: output_text`);
          assert.deepEqual(calls, sc.expect.calls ?? [], `${label}: function_call items`);
          assert.equal(r.usage?.input_tokens, sc.promptTokens);
        });
        await t.step(`${label}: streamed`, async () => {
          const stream = await s.client.chat.completions.create({ ...request(model, sc), stream: true });
          let content = "", reasoning = "", finish: string | null = null;
          const calls: { id: string; name: string; args: string }[] = [];
          for await (const chunk of stream) {
            const c = chunk.choices[0];
            if (!c) continue;
            const d = c.delta as typeof c.delta & { reasoning_content?: string };
            content += d.content ?? "";
            reasoning += d.reasoning_content ?? "";
            for (const tc of d.tool_calls ?? []) {
              if (tc.id) {
                assert.equal(tc.index, calls.length, `${label}: call index`);
                calls.push({ id: tc.id, name: tc.function?.name ?? "", args: tc.function?.arguments ?? "" });
              } else calls[tc.index].args += tc.function?.arguments ?? "";
            }
            finish = c.finish_reason ?? finish;
          }
          assert.ok(
            !content.includes("<|") && !content.includes("<｜") && !content.includes("<tool_call>"),
            content,
          );
          checkMessage(
            {
              content,
              reasoning_content: reasoning,
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: "function" as const,
                function: { name: c.name, arguments: c.args },
              })),
            },
            sc.expect,
            `${label} (streamed)`,
          );
          assert.equal(finish, sc.expect.calls?.length ? "tool_calls" : "stop");
        });
      }
      const first = (await scenarios(model)).find((x) => x.id === "call")!;
      await t.step(
        `${model}: tool_choice required is a call in the family's layout that parses`,
        async () => {
          const r = await s.client.chat.completions.create({
            ...request(model, first),
            tool_choice: "required",
            max_tokens: 64,
            logprobs: true,
          });
          // Written in the family's own layout (the tokens' text, special markers spelled out).
          const written = (r.choices[0].logprobs?.content ?? []).map((x) => x.token).join("");
          // After the reasoning, if the model thinks first (the gate leaves thinking unconstrained).
          const close = ["</think>", "[/THINK]"].find((t) => written.includes(t));
          const answer = close ? written.slice(written.indexOf(close) + close.length).trimStart() : written;
          assert.ok(answer.startsWith(fam.forcedOpener), `${model}: ${JSON.stringify(written)}`);
          const calls = r.choices[0].message.tool_calls ?? [];
          assert.ok(calls.length >= 1, JSON.stringify(r.choices[0]));
          const f = (calls[0] as OpenAI.ChatCompletionMessageFunctionToolCall).function;
          assert.equal(f.name, "get_weather");
          assert.equal(typeof JSON.parse(f.arguments).city, "string");
        },
      );
      const none = (await scenarios(model)).find((x) => x.id === "none")!;
      await t.step(`${model}: tool_choice none answers in text, never an empty reply`, async () => {
        const r = await s.client.chat.completions.create({
          ...request(model, { ...none, tools: true }),
          tool_choice: "none",
          max_tokens: 24,
          logprobs: true,
        });
        const m = r.choices[0].message as Msg;
        const tokens = r.choices[0].logprobs?.content?.map((x) => x.token) ?? [];
        for (const opener of OPENERS) assert.ok(!tokens.includes(opener), `${opener} was masked: ${tokens}`);
        assert.equal(m.tool_calls, undefined);
        assert.notEqual(r.choices[0].finish_reason, "tool_calls");
        assert.ok(((m.content ?? "") + (m.reasoning_content ?? "")).length > 0, JSON.stringify(r.choices[0]));
      });
    }
  });
});
