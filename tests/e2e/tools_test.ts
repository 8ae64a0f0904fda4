// End to end: tool calling on the real server with the generated chat-tiny model (CPU), through the official
// `openai` client and raw fetch. chat-tiny answers "What's the weather in Paris?" (or any prompt offering
// the get_weather tool, whose description says "weather") with a Hermes tool call, and a tool result with
// "It is sunny in Paris." (tools/models/README.md). Covered: parsed calls in OpenAI's shape, streamed
// deltas (index, id, name first; argument fragments after; no markup in content) reassembled by the SDK's
// stream helper into the same calls, tool_choice none/auto/required/named/allowed_tools with schema-valid
// arguments every time (constrained decoding), parallel_tool_calls, history rendering, the deprecated
// functions/function_call, runTools' two-step loop, zodFunction tools, and every bad input as a 400.
import { WEATHER_TOOL } from "../support/tools.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import { zodFunction } from "openai/helpers/zod";
import { join } from "node:path";
import { expectChatBadRequest, MODELS_DIR, postRaw, startTestServer, type TestServer } from "../helpers.ts";
import { prng } from "../support/synthetic_vocab.ts";
import { randomSchema, validate } from "../support/constrain_support.ts";

const MODEL = "chat-tiny";
const WEATHER = WEATHER_TOOL;
const TIME = {
  type: "function" as const,
  function: {
    name: "get_time",
    description: "The local time in a time zone",
    parameters: {
      type: "object",
      properties: { zone: { enum: ["UTC", "CET", "PST"] }, seconds: { type: "boolean" } },
      required: ["zone", "seconds"],
      additionalProperties: false,
    },
  },
};
const ASK_WEATHER = [{ role: "user" as const, content: "What's the weather in Paris?" }];
const HI = [{ role: "user" as const, content: "Hi there!" }];
const TOOL_RESULT = '{"temperature": 22, "sky": "sunny"}';
const SUNNY = "It is sunny in Paris.";

type Json = Record<string, unknown>;

async function post(s: TestServer, body: Json) {
  return await postRaw(`${s.url}/v1/chat/completions`, JSON.stringify({ model: MODEL, ...body }));
}

/** Raw SSE events of a streamed request. */
async function sse(s: TestServer, body: Json): Promise<Json[]> {
  const res = await fetch(`${s.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  const datas = (await res.text()).split("\n\n").filter(Boolean).map((f) => f.slice(6));
  assert.equal(datas.at(-1), "[DONE]");
  return datas.slice(0, -1).map((d) => JSON.parse(d));
}

function badRequest(s: TestServer, body: Json, param: string, message?: RegExp): Promise<void> {
  return expectChatBadRequest(s.url, { model: MODEL, ...body }, param, message);
}

Deno.test("tool calling e2e", async (t) => {
  const s = await startTestServer();
  const c = s.client;
  try {
    let plain: Awaited<ReturnType<typeof c.chat.completions.create>> & { choices: unknown[] };

    await t.step("auto: the model's call is parsed into tool_calls, content null", async () => {
      plain = await c.chat.completions.create({ model: MODEL, messages: ASK_WEATHER, tools: [WEATHER] });
      const choice = plain.choices[0];
      assert.equal(choice.finish_reason, "tool_calls");
      assert.equal(choice.message.content, null);
      const calls = choice.message.tool_calls!;
      assert.equal(calls.length, 1);
      assert.match(calls[0].id, /^call_[A-Za-z0-9]{24}$/);
      assert.equal(calls[0].type, "function");
      assert.ok(calls[0].type === "function");
      assert.equal(calls[0].function.name, "get_weather");
      assert.equal(typeof calls[0].function.arguments, "string");
      assert.deepEqual(JSON.parse(calls[0].function.arguments), { city: "Paris" });
      // Default tool_choice with tools is auto; parallel_tool_calls false keeps the one call.
      const single = await c.chat.completions.create({
        model: MODEL,
        messages: ASK_WEATHER,
        tools: [WEATHER],
        tool_choice: "auto",
        parallel_tool_calls: false,
      });
      assert.equal(single.choices[0].message.tool_calls?.length, 1);
      assert.equal(single.choices[0].finish_reason, "tool_calls");
    });

    await t.step("streamed: OpenAI's delta form, no markup in content, finish tool_calls", async () => {
      const events = await sse(s, { messages: ASK_WEATHER, tools: [WEATHER] });
      const deltas = events.map((e) => (e.choices as Json[])[0]).filter(Boolean);
      const callDeltas = deltas.flatMap((d) => ((d.delta as Json).tool_calls as Json[] | undefined) ?? []);
      assert.ok(callDeltas.length >= 2, JSON.stringify(callDeltas));
      const [first, ...rest] = callDeltas;
      assert.equal(first.index, 0);
      assert.match(String(first.id), /^call_/);
      assert.equal(first.type, "function");
      assert.deepEqual(first.function, { name: "get_weather", arguments: "" });
      for (const d of rest) {
        assert.equal(d.index, 0);
        assert.equal(d.id, undefined);
        assert.equal((d.function as Json).name, undefined);
        assert.equal(typeof (d.function as Json).arguments, "string");
      }
      const args = rest.map((d) => (d.function as Json).arguments).join("");
      assert.deepEqual(JSON.parse(args), { city: "Paris" });
      for (const d of deltas) {
        const content = (d.delta as Json).content;
        assert.ok(content === undefined || content === "", `content leaked: ${JSON.stringify(content)}`);
      }
      assert.equal(deltas.at(-1)!.finish_reason, "tool_calls");
    });

    await t.step("the SDK's stream helper reassembles the same calls as the plain answer", async () => {
      for (const tools of [[WEATHER], [WEATHER, TIME]]) {
        const body = { model: MODEL, messages: ASK_WEATHER, tools, tool_choice: "required" as const };
        const once = await c.chat.completions.create(body);
        const final = await c.chat.completions.stream(body).finalChatCompletion();
        const strip = (cs: { type: string; function?: { name: string; arguments: string } }[] = []) =>
          cs.map((x) => ({ type: x.type, name: x.function?.name, arguments: x.function?.arguments }));
        assert.deepEqual(
          strip(final.choices[0].message.tool_calls),
          strip(once.choices[0].message.tool_calls),
        );
        assert.equal(final.choices[0].finish_reason, once.choices[0].finish_reason);
        assert.ok(once.choices[0].message.tool_calls!.length >= 1);
      }
    });

    await t.step("none: no tools offered, never a call (even for the weather prompt)", async () => {
      const withNone = await c.chat.completions.create({
        model: MODEL,
        messages: ASK_WEATHER,
        tools: [WEATHER],
        tool_choice: "none",
        max_tokens: 12,
      });
      const choice = withNone.choices[0];
      assert.equal(choice.message.tool_calls, undefined);
      assert.notEqual(choice.finish_reason, "tool_calls");
      // Issue 30: chat-tiny would open its weather call; `<tool_call>` is masked, so it writes text instead of
      // a reply that vanished (before: a dropped call and an empty message).
      assert.ok((choice.message.content ?? "").length > 0);
      assert.doesNotMatch(choice.message.content ?? "", /tool_call|get_weather/);
      // Not offered: the prompt is the one without tools.
      const bare = await c.chat.completions.create({ model: MODEL, messages: ASK_WEATHER });
      assert.equal(withNone.usage?.prompt_tokens, bare.usage?.prompt_tokens);
      const events = await sse(s, {
        messages: ASK_WEATHER,
        tools: [WEATHER],
        tool_choice: "none",
        max_tokens: 12,
      });
      for (const e of events) {
        const d = (e.choices as Json[])[0];
        if (!d) continue;
        assert.equal((d.delta as Json).tool_calls, undefined);
        assert.doesNotMatch(String((d.delta as Json).content ?? ""), /tool_call/);
      }
      // Without tools the text is the model's own (no parsing at all).
      const hi = await c.chat.completions.create({ model: MODEL, messages: HI });
      assert.equal(hi.choices[0].message.content, "Hello from chat-tiny!");
    });

    await t.step("required and named: always a well-formed call with schema-valid arguments", async () => {
      const rand = prng(7);
      let checked = 0;
      for (let i = 0; i < 12; i++) {
        // Small enough that the tools preamble leaves room in chat-tiny's 1024-token context.
        let params = randomSchema(rand);
        while (JSON.stringify(params).length > 900) params = randomSchema(rand);
        // Function parameters are an object schema.
        if (params.type !== "object") {
          const { $defs, ...inner } = params;
          params = {
            type: "object",
            properties: { value: inner },
            required: ["value"],
            ...($defs ? { $defs } : {}),
          };
        }
        const tools = [
          {
            type: "function" as const,
            function: { name: `tool_${i}`, description: "Does a thing", parameters: params },
          },
          TIME,
        ];
        const named = i % 2 === 1;
        const stream = i % 3 === 0;
        const body = {
          model: MODEL,
          messages: i % 4 === 0 ? ASK_WEATHER : HI,
          tools,
          tool_choice: named
            ? { type: "function" as const, function: { name: `tool_${i}` } }
            : "required" as const,
          max_tokens: 150,
          parallel_tool_calls: i % 5 !== 0,
        };
        const res = stream
          ? await c.chat.completions.stream(body).finalChatCompletion()
          : await c.chat.completions.create(body);
        const choice = res.choices[0];
        assert.ok(
          choice.finish_reason === "tool_calls" || choice.finish_reason === "length",
          `${choice.finish_reason}: ${JSON.stringify(choice.message)}`,
        );
        const calls = choice.message.tool_calls ?? [];
        assert.ok(calls.length >= 1, JSON.stringify(choice.message));
        if (named || !body.parallel_tool_calls) assert.equal(calls.length, 1);
        for (const call of calls) {
          assert.ok(call.type === "function");
          assert.match(call.id, /^call_/);
          const schema = call.function.name === "get_time" ? TIME.function.parameters : params;
          if (named) assert.equal(call.function.name, `tool_${i}`);
          else assert.ok([`tool_${i}`, "get_time"].includes(call.function.name), call.function.name);
          const args = JSON.parse(call.function.arguments);
          assert.equal(validate(schema, args), null, `${call.function.arguments}\n${JSON.stringify(schema)}`);
          checked++;
        }
      }
      assert.ok(checked >= 12);
    });

    await t.step("response_format with tools under auto: a call or the document, one grammar", async () => {
      const REPORT = {
        type: "object",
        // Closed values, so chat-tiny (which would write its greeting into any string forever) finishes.
        properties: { answer: { enum: ["yes", "no"] }, confident: { type: "boolean" } },
        required: ["answer", "confident"],
        additionalProperties: false,
      };
      const format = {
        type: "json_schema" as const,
        json_schema: { name: "report", schema: REPORT, strict: true },
      };
      // The model calls the tool for the weather prompt: the call comes through (a schema-only grammar would
      // have made it write a document instead, the silent drop this guards against).
      const call = await c.chat.completions.create({
        model: MODEL,
        messages: ASK_WEATHER,
        tools: [WEATHER],
        response_format: format,
      });
      assert.equal(call.choices[0].finish_reason, "tool_calls");
      assert.deepEqual(
        call.choices[0].message.tool_calls?.map((x) => x.type === "function" ? x.function.name : x.type),
        ["get_weather"],
      );
      assert.equal(call.choices[0].message.content, null);
      const tokenizer = JSON.parse(
        await Deno.readTextFile(join(MODELS_DIR, "generated", MODEL, "tokenizer.json")),
      );
      // Every token that could start the call markup (`<tool_call>` whole, or spelled from pieces).
      const angled = [
        ...Object.entries(tokenizer.model.vocab as Record<string, number>),
        ...(tokenizer.added_tokens as { content: string; id: number }[]).map((x) =>
          [x.content, x.id] as const
        ),
      ].filter(([text]) => text.startsWith("<"));
      const noCall = Object.fromEntries(angled.map(([, id]) => [String(id), -100]));
      // Where the model does not call: chat-tiny's free text fits neither branch, so which one it enters is its
      // first-token noise (here the call). A bias against `<` leaves the document branch: the answer
      // is then a document valid against the schema (a calls-only grammar would still force the call).
      for (const stream of [false, true]) {
        let content = "";
        let finish: string | null = null;
        if (stream) {
          for (
            const e of await sse(s, {
              messages: HI,
              tools: [TIME],
              response_format: format,
              max_tokens: 60,
              logit_bias: noCall,
            })
          ) {
            const ch = (e.choices as Json[])[0];
            if (!ch) continue;
            content += ((ch.delta as Json).content as string | undefined) ?? "";
            finish = (ch.finish_reason as string | null) ?? finish;
            assert.equal((ch.delta as Json).tool_calls, undefined);
          }
        } else {
          const r = await c.chat.completions.create({
            model: MODEL,
            messages: HI,
            tools: [TIME],
            response_format: format,
            max_tokens: 60,
            logit_bias: noCall,
          });
          content = r.choices[0].message.content ?? "";
          finish = r.choices[0].finish_reason;
        }
        assert.equal(finish, "stop", content);
        assert.equal(validate(REPORT, JSON.parse(content)), null, content);
      }
      // json_object is a document alternative too.
      const obj = await c.chat.completions.create({
        model: MODEL,
        messages: HI,
        tools: [TIME],
        response_format: { type: "json_object" },
        max_tokens: 60,
        logit_bias: noCall,
      });
      const parsed = JSON.parse(obj.choices[0].message.content ?? "");
      assert.ok(parsed && typeof parsed === "object" && !Array.isArray(parsed));
      // A bad schema still names response_format's schema, a bad tool its parameters.
      await badRequest(s, {
        messages: HI,
        tools: [TIME],
        response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "nope" } } },
      }, "response_format.json_schema.schema");
    });

    await t.step("allowed_tools: only the allowed ones are offered and callable", async () => {
      const res = await c.chat.completions.create({
        model: MODEL,
        messages: HI,
        tools: [WEATHER, TIME],
        tool_choice: {
          type: "allowed_tools",
          allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "get_time" } }] },
        },
      });
      const calls = res.choices[0].message.tool_calls!;
      assert.ok(calls.length >= 1);
      for (const call of calls) {
        assert.ok(call.type === "function");
        assert.equal(call.function.name, "get_time");
        assert.equal(validate(TIME.function.parameters, JSON.parse(call.function.arguments)), null);
      }
    });

    await t.step("history: assistant tool_calls and tool results render through the template", async () => {
      const call = (plain.choices[0] as { message: { tool_calls: { id: string }[] } }).message.tool_calls[0];
      const history = [
        ...ASK_WEATHER,
        { role: "assistant" as const, content: null, tool_calls: [call as never] },
        { role: "tool" as const, tool_call_id: call.id, content: TOOL_RESULT },
      ];
      const res = await c.chat.completions.create({ model: MODEL, messages: history, tools: [WEATHER] });
      assert.equal(res.choices[0].message.content, SUNNY);
      assert.equal(res.choices[0].message.tool_calls, undefined);
      assert.equal(res.choices[0].finish_reason, "stop");
    });

    await t.step("runTools completes the two-step tool loop", async () => {
      const seen: unknown[] = [];
      const runner = c.chat.completions.runTools({
        model: MODEL,
        messages: ASK_WEATHER,
        tools: [{
          type: "function",
          function: {
            name: "get_weather",
            description: WEATHER.function.description,
            parameters: WEATHER.function.parameters,
            parse: JSON.parse,
            function: (args: { city: string }) => {
              seen.push(args);
              return { temperature: 22, sky: "sunny" };
            },
          },
        }],
      });
      assert.equal(await runner.finalContent(), SUNNY);
      assert.deepEqual(seen, [{ city: "Paris" }]);
      const messages = runner.messages;
      assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
    });

    await t.step(
      "zodFunction tools (strict) are accepted as the SDK sends them; parse() checks them",
      async () => {
        const tool = zodFunction({
          name: "get_time",
          description: "The local time in a time zone",
          parameters: z.object({ zone: z.enum(["UTC", "CET", "PST"]), seconds: z.boolean() }),
        });
        const res = await c.chat.completions.parse({
          model: MODEL,
          messages: HI,
          tools: [tool],
          tool_choice: "required",
        });
        const call = res.choices[0].message.tool_calls![0];
        assert.ok(call.type === "function");
        assert.equal(call.function.name, "get_time");
        const parsed = call.function.parsed_arguments as { zone: string; seconds: boolean };
        assert.ok(["UTC", "CET", "PST"].includes(parsed.zone));
        assert.equal(typeof parsed.seconds, "boolean");
      },
    );

    await t.step("deprecated functions / function_call answer with function_call", async () => {
      const res = await post(s, { messages: ASK_WEATHER, functions: [WEATHER.function] });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      const choice = (res.json.choices as Json[])[0];
      const message = choice.message as Json;
      assert.equal(choice.finish_reason, "function_call");
      assert.equal(message.content, null);
      assert.equal(message.tool_calls, undefined);
      const fc = message.function_call as { name: string; arguments: string };
      assert.equal(fc.name, "get_weather");
      assert.deepEqual(JSON.parse(fc.arguments), { city: "Paris" });

      const events = await sse(s, { messages: ASK_WEATHER, functions: [WEATHER.function] });
      const parts = events.map((e) => (e.choices as Json[])[0]).filter(Boolean);
      const fcs = parts.map((d) => (d.delta as Json).function_call as Json | undefined).filter(
        Boolean,
      ) as Json[];
      assert.equal(fcs[0].name, "get_weather");
      assert.deepEqual(JSON.parse(fcs.map((f) => f.arguments).join("")), { city: "Paris" });
      assert.equal(parts.at(-1)!.finish_reason, "function_call");

      const forced = await post(s, {
        messages: HI,
        functions: [WEATHER.function, TIME.function],
        function_call: { name: "get_time" },
      });
      const forcedCall = ((forced.json.choices as Json[])[0].message as Json).function_call as Json;
      assert.equal(forcedCall.name, "get_time");
      assert.equal(validate(TIME.function.parameters, JSON.parse(String(forcedCall.arguments))), null);

      const none = await post(s, {
        messages: ASK_WEATHER,
        functions: [WEATHER.function],
        function_call: "none",
        max_tokens: 12,
      });
      const noneChoice = (none.json.choices as Json[])[0];
      assert.equal((noneChoice.message as Json).function_call, undefined);
      // The call opener is masked: chat-tiny writes text instead (issue 30: never an empty reply).
      assert.notEqual(noneChoice.finish_reason, "function_call");
      assert.ok(String((noneChoice.message as Json).content ?? "").length > 0);

      // Legacy history: an assistant function_call and a function-role result.
      const history = await post(s, {
        messages: [
          ...ASK_WEATHER,
          {
            role: "assistant",
            content: null,
            function_call: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
          { role: "function", name: "get_weather", content: TOOL_RESULT },
        ],
        functions: [WEATHER.function],
      });
      assert.equal(((history.json.choices as Json[])[0].message as Json).content, SUNNY);
    });

    await t.step("bad tool input gives 400 naming the parameter", async () => {
      const tool = (name: string, extra: Json = {}) => ({
        type: "function",
        function: { name, parameters: { type: "object", properties: {} }, ...extra },
      });
      await badRequest(s, { messages: HI, tools: [tool("bad name")] }, "tools[0].function.name");
      await badRequest(s, { messages: HI, tools: [tool("x".repeat(65))] }, "tools[0].function.name");
      await badRequest(
        s,
        { messages: HI, tools: [{ type: "function", function: {} }] },
        "tools[0].function.name",
      );
      await badRequest(s, { messages: HI, tools: [{ type: "retrieval" }] }, "tools[0].type");
      await badRequest(
        s,
        { messages: HI, tools: [tool("f", { parameters: "x" })] },
        "tools[0].function.parameters",
      );
      await badRequest(
        s,
        { messages: HI, tools: [WEATHER, tool("f", { parameters: { type: "string" } })] },
        "tools[1].function.parameters",
        /object/,
      );
      await badRequest(s, { messages: HI, tool_choice: "auto" }, "tool_choice", /tools/);
      await badRequest(s, { messages: HI, tool_choice: "none" }, "tool_choice");
      await badRequest(s, { messages: HI, tools: [WEATHER], tool_choice: "sometimes" }, "tool_choice");
      await badRequest(
        s,
        { messages: HI, tools: [WEATHER], tool_choice: { type: "function", function: { name: "nope" } } },
        "tool_choice",
        /nope/,
      );
      await badRequest(
        s,
        {
          messages: HI,
          tools: [WEATHER],
          tool_choice: {
            type: "allowed_tools",
            allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "nope" } }] },
          },
        },
        "tool_choice",
      );
      await badRequest(
        s,
        { messages: HI, tools: [WEATHER], parallel_tool_calls: "yes" },
        "parallel_tool_calls",
      );
      // Strict tools: unsupported keywords are refused up front, naming the keyword.
      await badRequest(
        s,
        {
          messages: HI,
          tools: [
            tool("f", {
              strict: true,
              parameters: { type: "object", properties: { a: { type: "string", format: "email" } } },
            }),
            WEATHER,
          ],
        },
        "tools[0].function.parameters",
        /'format'/,
      );
      await badRequest(
        s,
        {
          messages: HI,
          tools: [
            WEATHER,
            tool("g", { strict: true, parameters: { type: "object", patternProperties: {} } }),
          ],
          tool_choice: "none",
        },
        "tools[1].function.parameters",
        /patternProperties/,
      );
      // A forced call over a malformed schema: 400, never 500.
      for (
        const parameters of [{ type: "object", properties: { a: { type: "nope" } } }, { $ref: "#/missing" }, {
          type: "object",
          properties: { a: { type: "integer", minimum: 5, maximum: 1 } },
          required: ["a"],
        }]
      ) {
        await badRequest(
          s,
          { messages: HI, tools: [WEATHER, tool("f", { parameters })], tool_choice: "required" },
          "tools[1].function.parameters",
        );
      }
      // Deprecated fields.
      await badRequest(s, { messages: HI, functions: [WEATHER.function], tools: [WEATHER] }, "functions");
      await badRequest(s, { messages: HI, functions: [{ name: "a b" }] }, "functions[0].name");
      await badRequest(s, { messages: HI, function_call: "auto" }, "function_call");
      await badRequest(
        s,
        { messages: HI, functions: [WEATHER.function], function_call: { name: "x" } },
        "function_call",
      );
      await badRequest(
        s,
        { messages: HI, tools: [WEATHER], tool_choice: "auto", function_call: "auto" },
        "function_call",
      );
      // The server is fine afterwards.
      const ok = await c.chat.completions.create({ model: MODEL, messages: HI });
      assert.equal(ok.choices[0].message.content, "Hello from chat-tiny!");
    });
  } finally {
    await s.close();
  }
});
