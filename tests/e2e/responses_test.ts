// End to end: the Responses API on the real server with chat-tiny (CPU) through the official `openai` client
// (`responses.create`, `responses.stream`, `responses.parse`, retrieve, delete, input_items, input_tokens)
// and raw fetch: exact text and usage, incomplete at max_output_tokens, a tool call continued through
// previous_response_id, the typed event sequence, the stored state across a server restart, and 400/404s
// naming their parameter. chat-tiny's replies are in tools/models/README.md.
import { WEATHER_TOOL } from "../support/tools.ts";
import assert from "node:assert/strict";
import { z } from "zod";
import { zodTextFormat } from "openai/helpers/zod";
import { errorOf, postRaw, startTestServer, type TestServer } from "../helpers.ts";
import { promptTokens } from "../support/chat_tiny_tokens.ts";

const MODEL = "chat-tiny";
const HELLO = "Hello from chat-tiny!";
const SUNNY = "It is sunny in Paris.";
const TOOL = {
  type: "function" as const,
  name: WEATHER_TOOL.function.name,
  description: WEATHER_TOOL.function.description,
  parameters: WEATHER_TOOL.function.parameters,
  strict: false,
};

const WEATHER_RESULT = '{"temperature": 22, "sky": "sunny"}';

/** The next turn of a weather call: its result, continuing the stored response `previous`. */
function answerCall(client: TestServer["client"], previous: string, callId: string) {
  return client.responses.create({
    model: MODEL,
    previous_response_id: previous,
    input: [{ type: "function_call_output", call_id: callId, output: WEATHER_RESULT }],
    tools: [TOOL],
  });
}

async function badRequest(s: TestServer, body: Record<string, unknown>, status = 400) {
  const res = await postRaw(`${s.url}/v1/responses`, JSON.stringify({ model: MODEL, ...body }));
  assert.equal(res.status, status, `${JSON.stringify(body)} -> ${res.status} ${JSON.stringify(res.json)}`);
  return errorOf(res.json);
}

Deno.test("responses e2e", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "oai-store-" });
  let s = await startTestServer({ flags: [`--data-dir=${dataDir}`] });
  try {
    let first = "";
    await t.step("a string input: exact text, usage and the response object's shape", async () => {
      const r = await s.client.responses.create({ model: MODEL, input: "Hi there!" });
      first = r.id;
      assert.match(r.id, /^resp_[A-Za-z0-9]{32}$/);
      assert.equal(r.object, "response");
      assert.equal(r.status, "completed");
      assert.equal(r.model, MODEL);
      assert.equal(r.output_text, HELLO);
      assert.equal(r.output.length, 1);
      const msg = r.output[0];
      assert.ok(msg.type === "message");
      assert.match(msg.id, /^msg_/);
      assert.deepEqual([msg.role, msg.status], ["assistant", "completed"]);
      assert.deepEqual(msg.content, [{ type: "output_text", annotations: [], logprobs: [], text: HELLO }]);
      const input = await promptTokens([{ role: "user", content: "Hi there!" }]);
      assert.deepEqual(r.usage, {
        input_tokens: input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 6,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: input + 6,
      });
      assert.equal(r.error, null);
      assert.equal(r.incomplete_details, null);
      assert.equal((r as unknown as { store: boolean }).store, true);
      // Unset sampling fields echo what sampling used: chat-tiny's generation_config says greedy.
      assert.deepEqual([r.temperature, r.top_p], [0, 1]);
      const set = await s.client.responses.create({ model: MODEL, input: "Hi there!", temperature: 0.5 });
      assert.deepEqual([set.temperature, set.top_p], [0.5, 1]);
      assert.deepEqual(r.metadata, {});
      assert.equal(r.previous_response_id, null);
    });

    await t.step("instructions are the system turn; input items with roles; metadata echoed", async () => {
      const r = await s.client.responses.create({
        model: MODEL,
        instructions: "Be brief.",
        input: [{ role: "developer", content: "Answer kindly." }, {
          type: "message",
          role: "user",
          content: [{ type: "input_text", text: "Hi there!" }],
        }],
        metadata: { run: "7" },
      });
      assert.equal(r.output_text, HELLO);
      assert.equal(r.instructions, "Be brief.");
      assert.deepEqual(r.metadata, { run: "7" });
      assert.equal(
        r.usage?.input_tokens,
        await promptTokens([
          { role: "system", content: "Be brief." },
          { role: "system", content: "Answer kindly." },
          { role: "user", content: "Hi there!" },
        ]),
      );
    });

    await t.step(
      "max_output_tokens: status incomplete, the reason, the message item incomplete",
      async () => {
        const r = await s.client.responses.create({
          model: MODEL,
          input: "Count forever",
          max_output_tokens: 4,
        });
        assert.equal(r.status, "incomplete");
        assert.deepEqual(r.incomplete_details, { reason: "max_output_tokens" });
        assert.equal(r.output_text, "Tick tock tick tock");
        assert.equal((r.output[0] as { status: string }).status, "incomplete");
        assert.equal(r.usage?.output_tokens, 4);
      },
    );

    await t.step("a function call, answered through previous_response_id with its output", async () => {
      const call = await s.client.responses.create({
        model: MODEL,
        input: "What's the weather in Paris?",
        tools: [TOOL],
      });
      assert.equal(call.output.length, 1);
      const fc = call.output[0];
      assert.ok(fc.type === "function_call");
      assert.match(fc.id!, /^fc_/);
      assert.match(fc.call_id, /^call_/);
      assert.deepEqual([fc.name, JSON.parse(fc.arguments), fc.status], [
        "get_weather",
        { city: "Paris" },
        "completed",
      ]);
      assert.equal(call.output_text, "");
      const answer = await answerCall(s.client, call.id, fc.call_id);
      assert.equal(answer.output_text, SUNNY);
      assert.equal(answer.previous_response_id, call.id);
      // The same conversation sent whole, without the store, renders the same prompt.
      const whole = await s.client.responses.create({
        model: MODEL,
        store: false,
        input: [
          { role: "user", content: "What's the weather in Paris?" },
          { type: "function_call", call_id: fc.call_id, name: "get_weather", arguments: fc.arguments },
          {
            type: "function_call_output",
            call_id: fc.call_id,
            output: WEATHER_RESULT,
          },
        ],
        tools: [TOOL],
      });
      assert.equal(whole.output_text, SUNNY);
      assert.equal(whole.usage?.input_tokens, answer.usage?.input_tokens);
      // A forced call with tool_choice naming the function.
      const forced = await s.client.responses.create({
        model: MODEL,
        input: "Hi there!",
        tools: [TOOL],
        tool_choice: { type: "function", name: "get_weather" },
      });
      assert.equal(forced.output[0].type, "function_call");
      assert.equal((forced.output[0] as { name: string }).name, "get_weather");
      const none = await s.client.responses.create({
        model: MODEL,
        input: "Hi there!",
        tools: [TOOL],
        tool_choice: "none",
      });
      assert.equal(none.output_text, HELLO);
    });

    await t.step(
      "text.format json_schema is constrained; responses.parse gives the parsed object",
      async () => {
        // A finite document (an enum): the constrained reply completes and the SDK parses it.
        const Mood = z.object({ mood: z.enum(["happy", "sad"]), ok: z.boolean() });
        const r = await s.client.responses.parse({
          model: MODEL,
          input: "Hi there!",
          text: { format: zodTextFormat(Mood, "mood") },
        });
        assert.equal(r.status, "completed");
        assert.deepEqual(Mood.parse(r.output_parsed), r.output_parsed);
        assert.deepEqual(JSON.parse(r.output_text), r.output_parsed);
        // chat-tiny fills a free string until the budget makes the constraint close the document: a valid
        // object, ended early, so the response is incomplete (chat's finish_reason "length") and the SDK leaves
        // it unparsed.
        const Out = z.object({ answer: z.string(), n: z.number().int() });
        const cut = await s.client.responses.parse({
          model: MODEL,
          input: "Hi there!",
          text: { format: zodTextFormat(Out, "out") },
          max_output_tokens: 60,
        });
        assert.equal(cut.status, "incomplete");
        assert.equal(cut.output_parsed, null);
        const doc = Out.parse(JSON.parse(cut.output_text));
        assert.equal(typeof doc.answer, "string");
        const obj = await s.client.responses.create({
          model: MODEL,
          input: "Hi there!",
          text: { format: { type: "json_object" } },
          max_output_tokens: 40,
        });
        assert.equal(typeof JSON.parse(obj.output_text), "object");
      },
    );

    await t.step("streamed: the typed events in order, numbered, and the SDK's final response", async () => {
      const stream = s.client.responses.stream({ model: MODEL, input: "Hi there!" });
      const types: string[] = [];
      const seqs: number[] = [];
      let deltas = "";
      for await (const ev of stream) {
        types.push(ev.type);
        seqs.push(ev.sequence_number);
        if (ev.type === "response.output_text.delta") deltas += ev.delta;
      }
      const final = await stream.finalResponse();
      assert.equal(final.output_text, HELLO);
      assert.equal(deltas, HELLO);
      assert.deepEqual(seqs, types.map((_, i) => i));
      const nDeltas = types.filter((x) => x === "response.output_text.delta").length;
      assert.ok(nDeltas >= 5, "one delta per token");
      assert.deepEqual(types, [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        ...Array(nDeltas).fill("response.output_text.delta"),
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
      ]);
      // Raw framing: an event line per data line, no [DONE].
      const raw = await fetch(`${s.url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: MODEL,
          input: "What's the weather in Paris?",
          tools: [TOOL],
          stream: true,
        }),
      });
      const frames = (await raw.text()).split("\n\n").filter(Boolean);
      for (const f of frames) assert.match(f, /^event: [a-z_.]+\ndata: \{/);
      const names = frames.map((f) => /^event: (\S+)/.exec(f)![1]);
      assert.ok(names.includes("response.function_call_arguments.delta"));
      assert.ok(names.includes("response.function_call_arguments.done"));
      const done = JSON.parse(
        frames.find((f) => f.includes("function_call_arguments.done"))!.split("data: ")[1],
      );
      assert.deepEqual(JSON.parse(done.arguments), { city: "Paris" });
      assert.equal(names.at(-1), "response.completed");
    });

    await t.step("input_tokens counts the prompt exactly as a response would", async () => {
      const body = {
        model: MODEL,
        input: "What's the weather in Paris?",
        tools: [TOOL],
        instructions: "Be brief.",
      };
      const counted = await s.client.responses.inputTokens.count(body);
      assert.equal(counted.object, "response.input_tokens");
      const r = await s.client.responses.create(body);
      assert.equal(counted.input_tokens, r.usage?.input_tokens);
    });

    await t.step("stored state: retrieve, input_items pages, delete; store false keeps nothing", async () => {
      const got = await s.client.responses.retrieve(first);
      assert.equal(got.output_text, HELLO);
      const r = await s.client.responses.create({
        model: MODEL,
        input: [
          { role: "user", content: "one" },
          { role: "assistant", content: "two" },
          { role: "user", content: "Hi there!" },
        ],
      });
      const page = await s.client.responses.inputItems.list(r.id, { limit: 2, order: "asc" });
      assert.deepEqual(page.data.map((i) => (i as { content: { text: string }[] }).content[0].text), [
        "one",
        "two",
      ]);
      assert.equal(page.has_more, true);
      const all: string[] = [];
      for await (const item of s.client.responses.inputItems.list(r.id, { limit: 1 })) {
        all.push((item as { content: { text: string }[] }).content[0].text);
      }
      assert.deepEqual(all, ["Hi there!", "two", "one"]);
      const unstored = await s.client.responses.create({ model: MODEL, input: "Hi there!", store: false });
      const missing = await fetch(`${s.url}/v1/responses/${unstored.id}`);
      assert.equal(missing.status, 404);
      assert.equal(errorOf(await missing.json()).type, "invalid_request_error");
      const del = await fetch(`${s.url}/v1/responses/${r.id}`, { method: "DELETE" });
      assert.deepEqual(await del.json(), { id: r.id, object: "response", deleted: true });
      assert.equal((await fetch(`${s.url}/v1/responses/${r.id}`)).status, 404);
      const gone = await badRequest(s, { input: "Hi", previous_response_id: r.id }, 404);
      assert.deepEqual([gone.param, gone.code], ["previous_response_id", "previous_response_not_found"]);
    });

    await t.step("stored responses survive a restart and continue their conversation", async () => {
      await s.close();
      s = await startTestServer({ flags: [`--data-dir=${dataDir}`] });
      const got = await s.client.responses.retrieve(first);
      assert.equal(got.output_text, HELLO);
      const next = await s.client.responses.create({
        model: MODEL,
        previous_response_id: first,
        input: "Hi there!",
      });
      assert.equal(next.output_text, HELLO);
      assert.equal(
        next.usage?.input_tokens,
        await promptTokens([
          { role: "user", content: "Hi there!" },
          { role: "assistant", content: HELLO },
          { role: "user", content: "Hi there!" },
        ]),
      );
    });

    await t.step("bad input: 400s naming the parameter; the server keeps serving", async () => {
      assert.equal((await badRequest(s, {})).param, "input");
      assert.equal(
        (await badRequest(s, { input: "x", tools: [{ type: "web_search" }] })).param,
        "tools[0].type",
      );
      const img = await badRequest(s, {
        input: [{ role: "user", content: [{ type: "input_image", image_url: "http://x" }] }],
      });
      assert.equal(img.param, "input[0].content[0].type");
      assert.equal(
        (await badRequest(s, { input: [{ type: "item_reference", id: "x" }] })).param,
        "input[0].type",
      );
      assert.equal((await badRequest(s, { input: "x", temperature: 3 })).param, "temperature");
      assert.equal((await badRequest(s, { input: "x", max_output_tokens: 0 })).param, "max_output_tokens");
      assert.equal((await badRequest(s, { input: "x", background: true })).param, "background");
      const choice = await badRequest(s, {
        input: "x",
        tools: [TOOL],
        tool_choice: { type: "function", name: "nope" },
      });
      assert.equal(choice.param, "tool_choice");
      const schema = await badRequest(s, {
        input: "x",
        text: {
          format: {
            type: "json_schema",
            name: "o",
            schema: { type: "object", properties: { a: { type: "string", pattern: "^x" } } },
            strict: true,
          },
        },
      });
      assert.deepEqual([schema.param, schema.code], ["text.format.schema", "invalid_json_schema"]);
      const ctx = await badRequest(s, { input: "x", max_output_tokens: 5000 });
      assert.equal(ctx.code, "context_length_exceeded");
      assert.equal((await badRequest(s, { model: "nope", input: "x" }, 404)).param, "model");
      const ok = await s.client.responses.create({ model: MODEL, input: "Hi there!" });
      assert.equal(ok.output_text, HELLO);
    });
  } finally {
    await s.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test({
  name: "responses e2e: two replicas share the PostgreSQL store (OAI_TEST_PG_URL)",
  ignore: !Deno.env.get("OAI_TEST_PG_URL"),
  fn: async () => {
    const flags = [`--store-url=${Deno.env.get("OAI_TEST_PG_URL")}`];
    const a = await startTestServer({ flags });
    const b = await startTestServer({ flags });
    try {
      const call = await a.client.responses.create({
        model: MODEL,
        input: "What's the weather in Paris?",
        tools: [TOOL],
      });
      const fc = call.output[0] as { call_id: string };
      // The next turn lands on the other replica.
      const answer = await answerCall(b.client, call.id, fc.call_id);
      assert.equal(answer.output_text, SUNNY);
      assert.equal((await a.client.responses.retrieve(answer.id)).output_text, SUNNY);
      const del = await fetch(`${a.url}/v1/responses/${answer.id}`, { method: "DELETE" });
      assert.equal(del.status, 200);
      assert.equal((await fetch(`${b.url}/v1/responses/${answer.id}`)).status, 404);
    } finally {
      await a.close();
      await b.close();
    }
  },
});

Deno.test("responses e2e: with --store-url=none nothing is kept, and the response says so", async () => {
  const s = await startTestServer({ flags: ["--store-url=none"] });
  try {
    const r = await s.client.responses.create({ model: MODEL, input: "Hi there!" });
    assert.equal((r as unknown as { store: boolean }).store, false);
    assert.equal((await fetch(`${s.url}/v1/responses/${r.id}`)).status, 404);
    // An explicit store: true cannot be honoured: reported, and refused under strict.
    const asked = await postRaw(
      `${s.url}/v1/responses`,
      JSON.stringify({ model: MODEL, input: "Hi", store: true }),
    );
    assert.equal(asked.status, 200);
    assert.equal(asked.headers.get("x-ignored-params"), "store");
    assert.equal(asked.json.store, false);
    const strict = await postRaw(
      `${s.url}/v1/responses`,
      JSON.stringify({ model: MODEL, input: "Hi", store: true }),
      { "content-type": "application/json", "x-strict": "true" },
    );
    assert.equal(strict.status, 400);
    assert.equal(errorOf(strict.json).param, "store");
    // chat-tiny's template has no reasoning_effort switch: an effort level is reported, not passed off as used.
    const effort = await postRaw(
      `${s.url}/v1/responses`,
      JSON.stringify({ model: MODEL, input: "Hi", store: false, reasoning: { effort: "high" } }),
    );
    assert.equal(effort.status, 200);
    assert.equal(effort.headers.get("x-ignored-params"), "reasoning.effort");
  } finally {
    await s.close();
  }
});
