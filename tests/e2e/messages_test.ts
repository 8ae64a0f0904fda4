// End to end: Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) on the real server
// with the generated models, through the official `@anthropic-ai/sdk` and raw HTTP: exact replies as ONNX
// (chat-tiny) and GGUF (chat-tiny through llama.cpp), JSON and streamed with Anthropic's event framing, a
// tool round trip, forced tools, tool_choice none, thinking blocks from think-tiny, stop sequences,
// max_tokens, count_tokens equal to the real tokenizer's count, every error type with its status, and
// X-Ignored-Params / --strict. The prompt-cache tests (a Claude-Code-shaped second turn, cache_control)
// are in messages_cache_test.ts.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { GENERATED_MODELS, startTestServer, type TestServer } from "../helpers.ts";
import { promptTokens } from "../support/chat_tiny_tokens.ts";
import { THINK_REPLIES } from "../../tools/models/think_tiny.ts";

const HI = "Hi there!";
const HELLO = "Hello from chat-tiny!";
const WEATHER_Q = "What's the weather in Paris?";
const SUNNY = "It is sunny in Paris.";
const WEATHER = {
  name: "get_weather",
  description: "Get the current weather for a city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};
/** The same tool as chat-tiny's template sees it (for exact prompt token counts). */
const WEATHER_FN = {
  type: "function",
  function: { name: WEATHER.name, description: WEATHER.description, parameters: WEATHER.input_schema },
};
/** A tool whose one argument is an enum, so a forced call closes in a few tokens. */
const LOOKUP = {
  name: "lookup",
  description: "Look something up",
  input_schema: {
    type: "object" as const,
    properties: { answer: { type: "string", enum: ["yes", "no"] } },
    required: ["answer"],
    additionalProperties: false,
  },
};

const MODELS = {
  "chat-gguf": { task: "chat" as const, path: "generated/chat-tiny/gguf/chat-tiny-F32.gguf" },
  "think-tiny": {
    task: "chat" as const,
    path: "generated/think-tiny",
    dtype: "fp32",
    device: "cpu" as const,
  },
};

async function withServer(fn: (s: TestServer, client: Anthropic) => Promise<void>, flags: string[] = []) {
  const s = await startTestServer({
    manifest: { ...GENERATED_MODELS, models: { ...GENERATED_MODELS.models, ...MODELS } },
    flags,
  });
  const client = new Anthropic({ baseURL: s.url, apiKey: "sk-test", maxRetries: 0, timeout: 120_000 });
  try {
    await fn(s, client);
  } finally {
    await s.close();
  }
}

/** POSTs a Messages request with fetch; the body parsed as JSON, or the raw SSE text. */
async function post(
  s: TestServer,
  body: unknown,
  opts: { path?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; json: Record<string, unknown>; text: string }> {
  const res = await fetch(`${s.url}${opts.path ?? "/v1/messages"}`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...opts.headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch { /* a stream */ }
  return { status: res.status, headers: res.headers, json, text };
}

/** The SSE text as (event name, data) pairs, checking that every event line names its data's type. */
function events(text: string): { event: string; data: Record<string, unknown> }[] {
  return text.trim().split("\n\n").map((frame) => {
    const [ev, data] = frame.split("\n");
    assert.match(ev, /^event: /);
    assert.match(data, /^data: /);
    const parsed = JSON.parse(data.slice(6));
    assert.equal(parsed.type, ev.slice(7), "the event line names the data's type");
    return { event: ev.slice(7), data: parsed };
  });
}

Deno.test("messages: text replies are exact as ONNX and GGUF, JSON and streamed, with real usage", async () => {
  const expectedPrompt = await promptTokens([{ role: "user", content: HI }]);
  await withServer(async (_s, client) => {
    for (const model of ["chat-tiny", "chat-gguf"]) {
      const msg = await client.messages.create({
        model,
        max_tokens: 50,
        messages: [{ role: "user", content: HI }],
      });
      assert.equal(msg.type, "message");
      assert.equal(msg.role, "assistant");
      assert.equal(msg.model, model);
      assert.match(msg.id, /^msg_01[A-Za-z0-9]{22}$/);
      assert.deepEqual(msg.content, [{ type: "text", text: HELLO }]);
      assert.equal(msg.stop_reason, "end_turn");
      assert.equal(msg.stop_sequence, null);
      assert.equal(msg.usage.output_tokens, 6);
      const u = msg.usage;
      assert.equal(
        u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
        expectedPrompt,
      );

      const stream = client.messages.stream({
        model,
        max_tokens: 50,
        messages: [{ role: "user", content: HI }],
      });
      let text = "";
      stream.on("text", (t) => text += t);
      const final = await stream.finalMessage();
      assert.equal(text, HELLO);
      assert.deepEqual(final.content, [{ type: "text", text: HELLO }]);
      assert.equal(final.stop_reason, "end_turn");
      assert.equal(final.usage.output_tokens, 6);
    }
  });
});

Deno.test("messages: the stream is framed as Anthropic frames it", async () => {
  await withServer(async (s) => {
    const r = await post(s, {
      model: "chat-tiny",
      max_tokens: 50,
      stream: true,
      messages: [{ role: "user", content: HI }],
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type")!, /^text\/event-stream/);
    const evs = events(r.text);
    const names = evs.map((e) => e.event);
    assert.deepEqual(names.slice(0, 3), ["message_start", "content_block_start", "ping"]);
    assert.deepEqual(names.slice(-3), ["content_block_stop", "message_delta", "message_stop"]);
    assert.ok(names.slice(3, -3).every((n) => n === "content_block_delta"));
    const start = evs[0].data.message as Record<string, unknown>;
    assert.equal(start.stop_reason, null);
    assert.deepEqual(start.content, []);
    assert.equal((start.usage as Record<string, number>).output_tokens, 0);
    assert.deepEqual(evs[1].data, {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    });
    const text = evs.filter((e) => e.event === "content_block_delta")
      .map((e) => (e.data.delta as { type: string; text: string }))
      .map((d) => (assert.equal(d.type, "text_delta"), d.text)).join("");
    assert.equal(text, HELLO);
    const delta = evs.at(-2)!.data;
    assert.deepEqual(delta.delta, { stop_reason: "end_turn", stop_sequence: null });
    assert.equal((delta.usage as Record<string, number>).output_tokens, 6);
    assert.ok(!r.text.includes("[DONE]"));
  });
});

Deno.test("messages: a tool round trip (tool_use, tool_result, answer), JSON and streamed", async () => {
  const calledPrompt = await promptTokens([{ role: "user", content: WEATHER_Q }], [WEATHER_FN]);
  await withServer(async (_s, client) => {
    for (const model of ["chat-tiny", "chat-gguf"]) {
      const first = await client.messages.create({
        model,
        max_tokens: 100,
        tools: [WEATHER],
        messages: [{ role: "user", content: WEATHER_Q }],
      });
      assert.equal(first.stop_reason, "tool_use");
      assert.equal(first.content.length, 1);
      const use = first.content[0];
      assert.equal(use.type, "tool_use");
      if (use.type !== "tool_use") return;
      assert.equal(use.name, "get_weather");
      assert.deepEqual(use.input, { city: "Paris" });
      assert.match(use.id, /^toolu_01/);
      const u = first.usage;
      assert.equal(u.input_tokens + (u.cache_read_input_tokens ?? 0), calledPrompt);

      const stream = client.messages.stream({
        model,
        max_tokens: 100,
        tools: [WEATHER],
        messages: [{ role: "user", content: WEATHER_Q }],
      });
      const json: string[] = [];
      stream.on("inputJson", (partial) => json.push(partial));
      const streamed = await stream.finalMessage();
      assert.equal(streamed.stop_reason, "tool_use");
      assert.deepEqual((streamed.content[0] as { input: unknown }).input, { city: "Paris" });
      assert.ok(json.length > 1, "arguments arrive in several input_json_delta events");
      assert.deepEqual(JSON.parse(json.join("")), { city: "Paris" });

      /** The conversation after the call, with its result given as `result`. */
      const withResult = (result: Record<string, unknown>) =>
        client.messages.create({
          model,
          max_tokens: 100,
          tools: [WEATHER],
          messages: [
            { role: "user", content: WEATHER_Q },
            { role: "assistant", content: first.content },
            { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, ...result }] },
          ],
        });
      const answer = await withResult({ content: '{"temperature": 22, "sky": "sunny"}' });
      assert.deepEqual(answer.content, [{ type: "text", text: SUNNY }]);
      assert.equal(answer.stop_reason, "end_turn");
      // A tool result given as blocks, flagged as an error, still reaches the model as a tool turn.
      const blocks = await withResult({
        is_error: true,
        content: [{ type: "text", text: "the weather service is down" }],
      });
      assert.deepEqual(blocks.content, [{ type: "text", text: SUNNY }]);
    }
  });
});

Deno.test("messages: tool_choice any, tool and none; disable_parallel_tool_use", async () => {
  await withServer(async (s, client) => {
    for (const model of ["chat-tiny", "chat-gguf"]) {
      for (const tool_choice of [{ type: "any" as const }, { type: "tool" as const, name: "lookup" }]) {
        const msg = await client.messages.create({
          model,
          max_tokens: 60,
          tools: [LOOKUP],
          tool_choice: { ...tool_choice, disable_parallel_tool_use: true },
          messages: [{ role: "user", content: HI }],
        });
        assert.equal(msg.stop_reason, "tool_use", JSON.stringify(msg));
        const uses = msg.content.filter((b) => b.type === "tool_use");
        assert.equal(uses.length, 1);
        const use = uses[0] as { name: string; input: { answer: string } };
        assert.equal(use.name, "lookup");
        assert.ok(["yes", "no"].includes(use.input.answer), JSON.stringify(use.input));
        assert.deepEqual(Object.keys(use.input), ["answer"]);
      }
      // none: the model answers in text, the tools are not offered.
      const none = await client.messages.create({
        model,
        max_tokens: 60,
        tools: [WEATHER],
        tool_choice: { type: "none" },
        messages: [{ role: "user", content: HI }],
      });
      assert.deepEqual(none.content, [{ type: "text", text: HELLO }]);
      assert.equal(none.stop_reason, "end_turn");
    }
    // A named tool that was not declared is the request's error.
    const r = await post(s, {
      model: "chat-tiny",
      max_tokens: 10,
      tools: [LOOKUP],
      tool_choice: { type: "tool", name: "nope" },
      messages: [{ role: "user", content: HI }],
    });
    assert.equal(r.status, 400);
    assert.match(JSON.stringify(r.json), /tool_choice\.name/);
  });
});

Deno.test("messages: thinking blocks from think-tiny, with a signature; disabled and omitted", async () => {
  const { reasoning, answer } = THINK_REPLIES.default;
  await withServer(async (s, client) => {
    const msg = await client.messages.create({
      model: "think-tiny",
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: HI }],
    });
    assert.equal(msg.content.length, 2);
    const [thought, text] = msg.content;
    assert.equal(thought.type, "thinking");
    if (thought.type !== "thinking") return;
    assert.equal(thought.thinking, reasoning);
    assert.ok(thought.signature.length > 20);
    assert.deepEqual(text, { type: "text", text: answer });
    assert.equal(msg.usage.output_tokens, 17);

    const stream = client.messages.stream({
      model: "think-tiny",
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: HI }],
    });
    let thinking = "";
    let signature = "";
    stream.on("thinking", (d) => thinking += d);
    stream.on("signature", (sig) => signature = sig);
    const final = await stream.finalMessage();
    assert.equal(thinking, reasoning);
    assert.equal(signature, thought.signature);
    assert.deepEqual(final.content, msg.content);

    // The earlier turn's thinking block goes back with the conversation and is left out of the prompt.
    const next = await client.messages.create({
      model: "think-tiny",
      max_tokens: 2048,
      messages: [
        { role: "user", content: HI },
        { role: "assistant", content: msg.content },
        { role: "user", content: HI },
      ],
    });
    assert.equal(next.content.at(-1)!.type, "text");

    const off = await client.messages.create({
      model: "think-tiny",
      max_tokens: 100,
      thinking: { type: "disabled" },
      messages: [{ role: "user", content: HI }],
    });
    assert.deepEqual(off.content, [{ type: "text", text: answer }]);

    // display "omitted" (what Claude Code asks for): the block and its signature, no text.
    const r = await post(s, {
      model: "think-tiny",
      max_tokens: 100,
      stream: true,
      thinking: { type: "adaptive", display: "omitted" },
      messages: [{ role: "user", content: HI }],
    });
    const evs = events(r.text);
    const start = evs.find((e) => e.event === "content_block_start")!.data.content_block;
    assert.deepEqual(start, { type: "thinking", thinking: "", signature: "" });
    const deltas = evs.filter((e) => e.event === "content_block_delta").map((e) =>
      e.data.delta as { type: string }
    );
    assert.ok(!deltas.some((d) => d.type === "thinking_delta"));
    assert.deepEqual(deltas[0], { type: "signature_delta", signature: thought.signature });
  });
});

Deno.test("messages: stop_sequences and max_tokens end the reply with Anthropic's stop reasons", async () => {
  await withServer(async (_s, client) => {
    for (const model of ["chat-tiny", "chat-gguf"]) {
      const stopped = await client.messages.create({
        model,
        max_tokens: 50,
        stop_sequences: ["nothing", " chat"],
        messages: [{ role: "user", content: HI }],
      });
      assert.deepEqual(stopped.content, [{ type: "text", text: "Hello from" }]);
      assert.equal(stopped.stop_reason, "stop_sequence");
      assert.equal(stopped.stop_sequence, " chat");

      const cut = await client.messages.create({
        model,
        max_tokens: 2,
        messages: [{ role: "user", content: HI }],
      });
      assert.deepEqual(cut.content, [{ type: "text", text: "Hello from" }]);
      assert.equal(cut.stop_reason, "max_tokens");
      assert.equal(cut.usage.output_tokens, 2);
    }
  });
});

Deno.test("messages: max_tokens beyond the context window is a ceiling (model_context_window_exceeded)", async () => {
  await withServer(async (_s, client) => {
    const prompt = await promptTokens([{ role: "user", content: "Count forever" }]);
    const msg = await client.messages.create({
      model: "chat-tiny",
      max_tokens: 128000,
      messages: [{ role: "user", content: "Count forever" }],
    });
    assert.equal(msg.stop_reason, "model_context_window_exceeded" as never);
    assert.equal(msg.usage.output_tokens, 1024 - prompt);
  });
});

Deno.test("messages: count_tokens is the real prompt size; system role messages and the billing header", async () => {
  await withServer(async (s, client) => {
    const system = "You are terse.";
    const count = await client.messages.countTokens({
      model: "chat-tiny",
      system,
      tools: [WEATHER],
      messages: [{ role: "user", content: WEATHER_Q }],
    });
    const expected = await promptTokens(
      [{ role: "system", content: system }, { role: "user", content: WEATHER_Q }],
      [WEATHER_FN],
    );
    assert.equal(count.input_tokens, expected);
    const msg = await client.messages.create({
      model: "chat-tiny",
      max_tokens: 100,
      system: [{ type: "text", text: system }],
      tools: [WEATHER],
      messages: [{ role: "user", content: WEATHER_Q }],
    });
    const u = msg.usage;
    assert.equal(
      u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
      expected,
    );

    // Claude Code's billing header is not part of the prompt; its system role message is a system turn.
    const billed = await client.messages.countTokens({
      model: "chat-tiny",
      system: [{
        type: "text",
        text: "x-anthropic-billing-header: cc_version=2.1.328.d15; cc_entrypoint=cli;",
      }, {
        type: "text",
        text: system,
      }],
      tools: [WEATHER],
      messages: [{ role: "user", content: WEATHER_Q }],
    });
    assert.equal(billed.input_tokens, expected);
    const r = await post(s, {
      model: "chat-tiny",
      messages: [{ role: "user", content: HI }, {
        role: "system",
        content: [{ type: "text", text: "Be brief." }],
      }],
    }, { path: "/v1/messages/count_tokens" });
    assert.equal(r.status, 200);
    // The system role message joins the user's turn (every template can render that).
    assert.equal(r.json.input_tokens, await promptTokens([{ role: "user", content: `${HI}\n\nBe brief.` }]));
  });
});

Deno.test("messages: errors in Anthropic's envelope with its types and statuses", async () => {
  await withServer(async (s) => {
    const ok = { model: "chat-tiny", max_tokens: 10, messages: [{ role: "user", content: HI }] };
    const cases: [unknown, number, string, RegExp][] = [
      [{ model: "chat-tiny", messages: ok.messages }, 400, "invalid_request_error", /max_tokens/],
      [{ ...ok, temperature: 1.5 }, 400, "invalid_request_error", /temperature/],
      [{ ...ok, messages: [] }, 400, "invalid_request_error", /messages/],
      [
        { ...ok, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64" } }] }] },
        400,
        "invalid_request_error",
        /messages\[0\]\.content\[0\]\.type.*image/,
      ],
      [
        { ...ok, messages: [{ role: "user", content: [{ type: "document", source: {} }] }] },
        400,
        "invalid_request_error",
        /document/,
      ],
      [
        { ...ok, tools: [{ type: "bash_20250124", name: "bash" }] },
        400,
        "invalid_request_error",
        /tools\[0\]\.type/,
      ],
      [
        { ...ok, messages: [{ role: "user", content: HI }, { role: "assistant", content: "Hello" }] },
        400,
        "invalid_request_error",
        /messages\[1\]/,
      ],
      [
        { ...ok, thinking: { type: "enabled", budget_tokens: 1024 } },
        400,
        "invalid_request_error",
        /budget_tokens/,
      ],
      [{ ...ok, model: "nope" }, 404, "not_found_error", /nope/],
      ["{not json", 400, "invalid_request_error", /JSON/i],
    ];
    for (const [body, status, type, message] of cases) {
      const r = await post(s, body);
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.type, "error");
      const err = r.json.error as { type: string; message: string };
      assert.equal(err.type, type);
      assert.match(err.message, message);
      assert.match(String(r.json.request_id), /^req_/);
    }
  });
  // 401 with keys configured: x-api-key (Anthropic's clients) and Authorization both work.
  await withServer(async (s) => {
    const body = { model: "chat-tiny", max_tokens: 10, messages: [{ role: "user", content: HI }] };
    let r = await post(s, body);
    assert.equal(r.status, 401);
    assert.equal((r.json.error as { type: string }).type, "authentication_error");
    r = await post(s, body, { headers: { "x-api-key": "wrong" } });
    assert.equal(r.status, 401);
    r = await post(s, body, { headers: { "x-api-key": "k1" } });
    assert.equal(r.status, 200);
    r = await post(s, body, { headers: { authorization: "Bearer k1" } });
    assert.equal(r.status, 200);
  }, ["--api-key=k1"]);
  // 413 past the body limit.
  await withServer(async (s) => {
    const r = await post(s, {
      model: "chat-tiny",
      max_tokens: 10,
      messages: [{ role: "user", content: "x".repeat(4000) }],
    });
    assert.equal(r.status, 413);
    assert.equal((r.json.error as { type: string }).type, "request_too_large");
  }, ["--max-json-body=2KB"]);
  // 529 overloaded_error with Retry-After when the model's queue is full.
  await withServer(async (s) => {
    const running = fetch(`${s.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat-tiny",
        max_tokens: 300,
        stream: true,
        messages: [{ role: "user", content: "Count forever" }],
      }),
    });
    const first = await running;
    const reader = first.body!.getReader();
    await reader.read(); // generating: the model's one slot is taken
    const r = await post(s, {
      model: "chat-tiny",
      max_tokens: 10,
      messages: [{ role: "user", content: HI }],
    });
    assert.equal(r.status, 529);
    assert.equal((r.json.error as { type: string }).type, "overloaded_error");
    assert.ok(Number(r.headers.get("retry-after")) >= 1);
    await reader.cancel();
  }, ["--queue-size=0", "--parallel=1"]);
  // A server-side failure (a model whose file is missing, offline): api_error with its status, no paths.
  const s = await startTestServer({
    manifest: {
      ...GENERATED_MODELS,
      models: { ...GENERATED_MODELS.models, gone: { task: "chat", path: "generated/nowhere/missing.gguf" } },
    },
  });
  try {
    const r = await post(s, { model: "gone", max_tokens: 10, messages: [{ role: "user", content: HI }] });
    assert.equal(r.status, 503, r.text);
    assert.equal((r.json.error as { type: string }).type, "api_error");
    assert.ok(!r.text.includes("/generated/"), r.text);
  } finally {
    await s.close();
  }
});

Deno.test("messages: unknown fields are reported, refused under strict; beta query and headers accepted", async () => {
  await withServer(async (s) => {
    const body = {
      model: "chat-tiny",
      max_tokens: 10,
      messages: [{ role: "user", content: HI }],
      context_management: { edits: [] },
      metadata: { user_id: "u1" },
      tools: [{ ...WEATHER, defer_loading: true }],
    };
    const headers = {
      "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
      "x-app": "cli",
      "x-api-key": "anything",
    };
    let r = await post(s, body, { path: "/v1/messages?beta=true", headers });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-ignored-params"), "context_management, tools[0].defer_loading");
    // Unknown keys of content blocks, and a cache lifetime the prompt cache does not keep, are reported too.
    const blocks = await post(s, {
      model: "chat-tiny",
      max_tokens: 10,
      system: [{ type: "text", text: "S", cache_control: { type: "ephemeral", ttl: "1h" } }],
      messages: [{ role: "user", content: [{ type: "text", text: HI, citations: [{ type: "x" }] }] }],
    });
    assert.equal(blocks.status, 200);
    assert.equal(
      blocks.headers.get("x-ignored-params"),
      "system[0].cache_control.ttl, messages[0].content[0].citations",
    );
    r = await post(s, body, { headers: { ...headers, "x-strict": "true" } });
    assert.equal(r.status, 400);
    assert.match((r.json.error as { message: string }).message, /context_management/);
    assert.ok(s.records.some((rec) => rec.user === "u1"), "metadata.user_id is in the request's log record");
  });
});

Deno.test("messages: output_config.format is structured output; output_config.effort without a switch is reported", async () => {
  await withServer(async (s, client) => {
    for (const model of ["chat-tiny", "chat-gguf"]) {
      const msg = await client.messages.create({
        model,
        max_tokens: 60,
        output_config: { format: { type: "json_schema", schema: LOOKUP.input_schema } },
        messages: [{ role: "user", content: HI }],
      });
      assert.equal(msg.content.length, 1);
      const text = msg.content[0].type === "text" ? msg.content[0].text : "";
      const doc = JSON.parse(text);
      assert.deepEqual(Object.keys(doc), ["answer"]);
      assert.ok(["yes", "no"].includes(doc.answer), text);
      assert.equal(msg.stop_reason, "end_turn");
    }
    const r = await post(s, {
      model: "chat-tiny",
      max_tokens: 10,
      output_config: { effort: "high" },
      messages: [{ role: "user", content: HI }],
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("x-ignored-params"), "output_config.effort");
    const bad = await post(s, {
      model: "chat-tiny",
      max_tokens: 10,
      output_config: {
        format: {
          type: "json_schema",
          schema: { type: "object", properties: { a: { enum: [] } }, required: ["a"] },
        },
      },
      messages: [{ role: "user", content: HI }],
    });
    assert.equal(bad.status, 400, bad.text);
    assert.match((bad.json.error as { message: string }).message, /output_config\.format\.schema/);
  });
});

Deno.test("messages: /v1/models in Anthropic's shape under anthropic-version, with paging", async () => {
  await withServer(async (s, client) => {
    const page = await client.models.list({ limit: 2 });
    assert.deepEqual(page.data.map((m) => m.id), ["chat-tiny", "chat-gguf"]);
    assert.equal(page.data[0].type, "model");
    assert.equal(page.data[0].display_name, "chat-tiny");
    assert.match(page.data[0].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(page.has_more, true);
    const all: string[] = [];
    for await (const m of client.models.list({ limit: 1 })) all.push(m.id);
    assert.deepEqual(all, ["chat-tiny", "chat-gguf", "think-tiny"]);
    const one = await client.models.retrieve("chat-gguf");
    assert.equal(one.id, "chat-gguf");
    // Without anthropic-version the list is OpenAI's.
    const openai = await (await fetch(`${s.url}/v1/models`)).json();
    assert.equal(openai.object, "list");
  });
});
