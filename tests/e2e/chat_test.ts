// End to end: POST /v1/chat/completions on the real server with the generated chat-tiny model (CPU), through
// the official `openai` client and raw fetch: exact greedy replies and usage, streaming shapes, stop
// sequences, max_tokens, n and seeds, logprobs, every 400 with its param, the context window, cancellation
// freeing the model, and 429 from a full queue. chat-tiny's replies are documented in tools/models/README.md.
import { WEATHER_TOOL } from "../support/tools.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { errorOf, MODELS_DIR, postRaw, startTestServer, type TestServer } from "../helpers.ts";
import { assertStreamsTogether } from "../support/concurrent_streams.ts";
import { promptTokens } from "../support/chat_tiny_tokens.ts";
import { transformersRuntime } from "../../src/engines/transformers/runtime.ts";
import { memoryLogger } from "../../src/log.ts";

const MODEL = "chat-tiny";
const CONTEXT = 1024;
const HELLO = "Hello from chat-tiny!";
/** Generated tokens of the default reply, end-of-sequence included. */
const HELLO_TOKENS = 6;
const UNICODE = "Café 東京 🙂";
const UNICODE_TOKENS = 16;

type Msg = { role: string; content: unknown; [k: string]: unknown };

/** Raw SSE: the JSON events and whether [DONE] came last. */
async function rawStream(
  url: string,
  body: unknown,
): Promise<{ events: Record<string, unknown>[]; done: boolean }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...(body as object), stream: true }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const text = await res.text();
  const frames = text.split("\n\n").filter(Boolean);
  for (const f of frames) assert.ok(f.startsWith("data: "), `bad frame ${JSON.stringify(f)}`);
  const datas = frames.map((f) => f.slice(6));
  const done = datas.at(-1) === "[DONE]";
  return { events: datas.filter((d) => d !== "[DONE]").map((d) => JSON.parse(d)), done };
}

async function badRequest(s: TestServer, body: Record<string, unknown>): Promise<ReturnType<typeof errorOf>> {
  const res = await postRaw(`${s.url}/v1/chat/completions`, JSON.stringify({ model: MODEL, ...body }));
  assert.equal(
    res.status,
    400,
    `${JSON.stringify(body).slice(0, 120)} -> ${res.status} ${JSON.stringify(res.json)}`,
  );
  const err = errorOf(res.json);
  assert.equal(err.type, "invalid_request_error");
  return err;
}

const hi: Msg[] = [{ role: "user", content: "Hi there!" }];
const forever: Msg[] = [{ role: "user", content: "Count forever" }];

/** A long stream of which `reads` chunks are read, then left unread: it holds a generation slot until aborted. */
async function holdStream(s: TestServer, reads: number) {
  const ctrl = new AbortController();
  const res = await fetch(`${s.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: forever, stream: true, max_tokens: 900 }),
    signal: ctrl.signal,
  });
  const reader = res.body!.getReader();
  for (let i = 0; i < reads; i++) await reader.read();
  return { ctrl, reader };
}

Deno.test("chat completions e2e", async (t) => {
  const s = await startTestServer();
  try {
    await t.step("exact greedy text and exact usage; OpenAI's object shape", async () => {
      const res = await s.client.chat.completions.create({
        model: MODEL,
        messages: hi as never,
        temperature: 0,
      });
      assert.match(res.id, /^chatcmpl-[A-Za-z0-9]{29}$/);
      assert.equal(res.object, "chat.completion");
      assert.equal(res.model, MODEL);
      assert.ok(Number.isInteger(res.created) && Math.abs(res.created - Date.now() / 1000) < 60);
      assert.match(res.system_fingerprint ?? "", /^fp_[0-9a-f]{8}$/);
      assert.equal(res.choices.length, 1);
      const c = res.choices[0];
      assert.equal(c.index, 0);
      assert.equal(c.finish_reason, "stop");
      assert.equal(c.logprobs, null);
      assert.deepEqual({ role: c.message.role, content: c.message.content, refusal: c.message.refusal }, {
        role: "assistant",
        content: HELLO,
        refusal: null,
      });
      const prompt = await promptTokens(hi);
      assert.equal(res.usage?.prompt_tokens, prompt);
      assert.equal(res.usage?.completion_tokens, HELLO_TOKENS);
      assert.equal(res.usage?.total_tokens, prompt + HELLO_TOKENS);
      const rec = s.records.at(-1)!;
      assert.equal(rec.model, MODEL);
      assert.equal(rec.promptTokens, prompt);
      assert.equal(rec.completionTokens, HELLO_TOKENS);
    });

    await t.step("the model's greedy default applies without temperature; aliases resolve", async () => {
      const res = await s.client.chat.completions.create({ model: "gpt-4o-mini", messages: hi as never });
      assert.equal(res.choices[0].message.content, HELLO);
      assert.equal(res.model, MODEL);
    });

    await t.step(
      "streaming: role first, content deltas, finish chunk, [DONE]; concatenates to the JSON text",
      async () => {
        const { events, done } = await rawStream(s.url, { model: MODEL, messages: hi, temperature: 0 });
        assert.ok(done);
        const ids = new Set(events.map((e) => e.id));
        assert.equal(ids.size, 1);
        for (const e of events) {
          assert.equal(e.object, "chat.completion.chunk");
          assert.equal(e.model, MODEL);
          assert.ok("usage" in e && e.usage === null);
          assert.equal((e.choices as unknown[]).length, 1);
        }
        const choices = events.map((e) => (e.choices as Record<string, unknown>[])[0]);
        assert.deepEqual(choices[0].delta, { role: "assistant", content: "", refusal: null });
        const last = choices.at(-1)!;
        assert.deepEqual(last.delta, {});
        assert.equal(last.finish_reason, "stop");
        for (const c of choices.slice(0, -1)) assert.equal(c.finish_reason, null);
        const text = choices.map((c) => (c.delta as { content?: string }).content ?? "").join("");
        assert.equal(text, HELLO);
        // Deltas arrive token by token.
        assert.ok(choices.length >= 5, `only ${choices.length} chunks`);
      },
    );

    await t.step("include_usage adds one final chunk with choices [] and the usage", async () => {
      const stream = await s.client.chat.completions.create({
        model: MODEL,
        messages: hi as never,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = [];
      for await (const c of stream) chunks.push(c);
      const last = chunks.at(-1)!;
      assert.deepEqual(last.choices, []);
      const prompt = await promptTokens(hi);
      assert.equal(last.usage?.prompt_tokens, prompt);
      assert.equal(last.usage?.completion_tokens, HELLO_TOKENS);
      for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
      assert.equal(chunks.at(-2)!.choices[0].finish_reason, "stop");
    });

    await t.step("the SDK's stream helper assembles the same message", async () => {
      const runner = s.client.chat.completions.stream({ model: MODEL, messages: hi as never });
      const final = await runner.finalChatCompletion();
      assert.equal(final.choices[0].message.content, HELLO);
      assert.equal(final.choices[0].finish_reason, "stop");
    });

    await t.step(
      "max_tokens gives finish_reason length and exactly that many tokens; the smaller limit wins",
      async () => {
        const res = await s.client.chat.completions.create({
          model: MODEL,
          messages: forever as never,
          max_tokens: 7,
        });
        assert.equal(res.choices[0].finish_reason, "length");
        assert.equal(res.usage?.completion_tokens, 7);
        assert.equal(res.choices[0].message.content, "Tick tock tick tock tick tock tick");
        const both = await s.client.chat.completions.create({
          model: MODEL,
          messages: forever as never,
          max_tokens: 9,
          max_completion_tokens: 4,
        });
        assert.equal(both.usage?.completion_tokens, 4);
        assert.equal(both.choices[0].message.content, "Tick tock tick tock");
        // A reply that ends by itself before the limit says stop.
        const short = await s.client.chat.completions.create({
          model: MODEL,
          messages: hi as never,
          max_tokens: 50,
        });
        assert.equal(short.choices[0].finish_reason, "stop");
        // Streaming counts the same.
        const { events } = await rawStream(s.url, {
          model: MODEL,
          messages: forever,
          max_tokens: 7,
          stream_options: { include_usage: true },
        });
        assert.equal((events.at(-1)!.usage as { completion_tokens: number }).completion_tokens, 7);
        const fin = events.at(-2)!.choices as { finish_reason: string }[];
        assert.equal(fin[0].finish_reason, "length");
      },
    );

    await t.step("ignore_eos / min_tokens force the length (benchmark control)", async () => {
      const res = await s.client.chat.completions.create({
        model: MODEL,
        messages: hi as never,
        max_tokens: 20,
        ignore_eos: true,
      } as never);
      assert.equal(res.usage?.completion_tokens, 20);
      assert.equal(res.choices[0].finish_reason, "length");
      assert.ok(res.choices[0].message.content!.startsWith(HELLO));
      const min = await s.client.chat.completions.create({
        model: MODEL,
        messages: hi as never,
        max_tokens: 12,
        min_tokens: 8,
      } as never);
      assert.ok(min.usage!.completion_tokens >= 8);
    });

    await t.step(
      "stop sequences end the reply before them, never in the output, streamed or not",
      async () => {
        for (const stop of ["from", ["zzz", " chat"], ["-ti", "!"], "o f"]) {
          const res = await s.client.chat.completions.create({ model: MODEL, messages: hi as never, stop });
          const stops = Array.isArray(stop) ? stop : [stop];
          const cut = Math.min(...stops.map((x) => HELLO.indexOf(x)).filter((i) => i >= 0));
          assert.equal(res.choices[0].message.content, HELLO.slice(0, cut));
          assert.equal(res.choices[0].finish_reason, "stop");
          const { events } = await rawStream(s.url, { model: MODEL, messages: hi, stop });
          const pieces = events.map((e) =>
            (e.choices as { delta: { content?: string } }[])[0].delta.content ?? ""
          );
          assert.equal(pieces.join(""), HELLO.slice(0, cut));
        }
        // A stop sequence that never appears changes nothing.
        const res = await s.client.chat.completions.create({
          model: MODEL,
          messages: hi as never,
          stop: ["xyz"],
        });
        assert.equal(res.choices[0].message.content, HELLO);
      },
    );

    await t.step("multi-byte text streams intact: no chunk holds a broken character", async () => {
      const msgs = [{ role: "user", content: "Say something in unicode" }];
      const { events } = await rawStream(s.url, {
        model: MODEL,
        messages: msgs,
        stream_options: { include_usage: true },
      });
      const pieces = events.slice(0, -1).map((e) =>
        (e.choices as { delta: { content?: string } }[])[0].delta.content ?? ""
      );
      for (const p of pieces) assert.ok(!p.includes("\uFFFD"), `broken piece ${JSON.stringify(p)}`);
      assert.equal(pieces.join(""), UNICODE);
      assert.equal((events.at(-1)!.usage as { completion_tokens: number }).completion_tokens, UNICODE_TOKENS);
      const res = await s.client.chat.completions.create({ model: MODEL, messages: msgs as never });
      assert.equal(res.choices[0].message.content, UNICODE);
    });

    await t.step("n=2 with a seed: two choices, usage over both; same seed, same output", async () => {
      const req = { model: MODEL, messages: hi as never, n: 2, seed: 1234, temperature: 2, max_tokens: 30 };
      const a = await s.client.chat.completions.create(req);
      assert.deepEqual(a.choices.map((c) => c.index), [0, 1]);
      assert.notEqual(a.choices[0].message.content, a.choices[1].message.content);
      const b = await s.client.chat.completions.create(req);
      assert.deepEqual(b.choices.map((c) => c.message.content), a.choices.map((c) => c.message.content));
      const other = await s.client.chat.completions.create({ ...req, seed: 99 });
      assert.notDeepEqual(
        other.choices.map((c) => c.message.content),
        a.choices.map((c) => c.message.content),
      );
      // Streamed with the same seed: the same two texts.
      const { events } = await rawStream(s.url, { ...req, stream_options: { include_usage: true } });
      const texts = ["", ""];
      for (const e of events.slice(0, -1)) {
        const c = (e.choices as { index: number; delta: { content?: string } }[])[0];
        texts[c.index] += c.delta.content ?? "";
      }
      assert.deepEqual(texts, a.choices.map((c) => c.message.content));
      const usage = events.at(-1)!.usage as { completion_tokens: number };
      assert.equal(usage.completion_tokens, a.usage?.completion_tokens);
      // n greedy choices are identical, and usage counts both.
      const g = await s.client.chat.completions.create({
        model: MODEL,
        messages: hi as never,
        n: 2,
        temperature: 0,
      });
      assert.deepEqual(g.choices.map((c) => c.message.content), [HELLO, HELLO]);
      assert.equal(g.usage?.completion_tokens, 2 * HELLO_TOKENS);
    });

    await t.step(
      "logprobs: one entry per completion token, text and bytes add up, top alternatives sorted",
      async () => {
        const res = await s.client.chat.completions.create({
          model: MODEL,
          messages: hi as never,
          logprobs: true,
          top_logprobs: 3,
        });
        const lp = res.choices[0].logprobs!.content!;
        // One entry per completion token: the text's, then end-of-sequence as the tokenizer spells it.
        assert.equal(lp.length, HELLO_TOKENS);
        assert.equal(lp.length, res.usage!.completion_tokens);
        assert.equal(lp.at(-1)!.token, "<|im_end|>");
        assert.equal(lp.slice(0, -1).map((t) => t.token).join(""), HELLO);
        assert.deepEqual(lp.slice(0, -1).flatMap((t) => t.bytes), [...new TextEncoder().encode(HELLO)]);
        for (const t of lp) {
          assert.ok(t.logprob <= 0 && t.logprob > -1);
          assert.equal(t.top_logprobs.length, 3);
          assert.equal(t.top_logprobs[0].token, t.token);
          for (let i = 1; i < 3; i++) assert.ok(t.top_logprobs[i - 1].logprob >= t.top_logprobs[i].logprob);
        }
        const plain = await s.client.chat.completions.create({
          model: MODEL,
          messages: hi as never,
          logprobs: true,
        });
        assert.deepEqual(plain.choices[0].logprobs!.content![0].top_logprobs, []);
        // Streamed logprobs ride on the content chunks.
        const { events } = await rawStream(s.url, {
          model: MODEL,
          messages: hi,
          logprobs: true,
          top_logprobs: 1,
        });
        const streamed = events.flatMap((e) =>
          (e.choices as { logprobs: { content: { token: string }[] } | null }[])[0].logprobs?.content ?? []
        );
        assert.equal(streamed.map((t) => t.token).join(""), HELLO + "<|im_end|>");
      },
    );

    await t.step("logit_bias and penalties steer the choice", async () => {
      const res = await s.client.chat.completions.create({
        model: MODEL,
        messages: hi as never,
        logprobs: true,
        max_tokens: 1,
      });
      const helloBytes = res.choices[0].logprobs!.content![0].token;
      assert.equal(helloBytes, "Hello");
      const { tf } = await transformersRuntime("cpu", memoryLogger());
      const tok = await tf.AutoTokenizer.from_pretrained(join(MODELS_DIR, "generated", MODEL), {
        local_files_only: true,
      });
      const helloId = tok.encode("Hello", { add_special_tokens: false });
      assert.equal(helloId.length, 1);
      const banned = await s.client.chat.completions.create({
        model: MODEL,
        messages: hi as never,
        max_tokens: 3,
        logit_bias: { [String(helloId[0])]: -100 },
      });
      assert.ok(!banned.choices[0].message.content!.startsWith("Hello"));
      // A strong frequency penalty breaks the endless Tick-tock loop's repetition.
      const plain = await s.client.chat.completions.create({
        model: MODEL,
        messages: forever as never,
        max_tokens: 12,
      });
      const penalized = await s.client.chat.completions.create({
        model: MODEL,
        messages: forever as never,
        max_tokens: 12,
        frequency_penalty: 2,
        presence_penalty: 2,
      });
      assert.notEqual(penalized.choices[0].message.content, plain.choices[0].message.content);
    });

    await t.step("roles: developer is system, text parts, names, tool calls and results render", async () => {
      const msgs = [
        { role: "developer", content: [{ type: "text", text: "Be brief." }] },
        {
          role: "user",
          name: "ann",
          content: [{ type: "text", text: "Hi " }, { type: "text", text: "there!" }],
        },
      ];
      const res = await s.client.chat.completions.create({ model: MODEL, messages: msgs as never });
      assert.equal(res.choices[0].message.content, HELLO);
      const asSystem = await promptTokens([
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi there!" },
      ]);
      assert.equal(res.usage?.prompt_tokens, asSystem);
      const history = [
        { role: "user", content: "What's the weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city": "Paris"}' },
          }],
        },
        { role: "tool", tool_call_id: "call_1", content: '{"temperature": 22, "sky": "sunny"}' },
      ];
      const answer = await s.client.chat.completions.create({
        model: MODEL,
        messages: history as never,
        tools: [WEATHER_TOOL],
      });
      assert.equal(answer.choices[0].message.content, "It is sunny in Paris.");
    });

    await t.step("unknown fields the SDKs send are accepted and ignored", async () => {
      const res = await postRaw(
        `${s.url}/v1/chat/completions`,
        JSON.stringify({
          model: MODEL,
          messages: hi,
          user: "u-1",
          metadata: { a: "b" },
          store: false,
          service_tier: "auto",
          reasoning_effort: "low",
          parallel_tool_calls: true,
          prompt_cache_key: "k",
          some_future_field: { x: 1 },
          stop: null,
          seed: null,
        }),
      );
      assert.equal(res.status, 200, JSON.stringify(res.json));
      // Accepted, and with their effect: the same reply as without them, and the ones that did nothing named.
      const choices = res.json.choices as { message: { content: string } }[];
      assert.equal(choices[0].message.content, "Hello from chat-tiny!");
      const ignored = (res.headers.get("x-ignored-params") ?? "").split(/,\s*/);
      // chat-tiny's template has no reasoning_effort switch: "low" changed nothing, and says so.
      for (
        const f of [
          "user",
          "metadata",
          "service_tier",
          "prompt_cache_key",
          "some_future_field",
          "reasoning_effort",
        ]
      ) {
        assert.ok(ignored.includes(f), `${f} is reported as ignored: ${ignored}`);
      }
      for (const f of ["stop", "seed", "store"]) assert.ok(!ignored.includes(f), f);
    });

    await t.step("bad input gives 400 naming the parameter", async () => {
      const cases: [Record<string, unknown>, string, RegExp?][] = [
        [{ messages: hi, temperature: 2.5 }, "temperature"],
        [{ messages: hi, temperature: -0.1 }, "temperature"],
        [{ messages: hi, top_p: 1.5 }, "top_p"],
        [{ messages: hi, n: 0 }, "n"],
        [{ messages: hi, n: 129 }, "n"],
        [{ messages: hi, stop: ["a", "b", "c", "d", "e"] }, "stop"],
        [{ messages: [{ role: "robot", content: "hi" }] }, "messages[0].role"],
        [{ messages: [] }, "messages"],
        [{}, "messages"],
        [{ messages: hi, presence_penalty: 3 }, "presence_penalty"],
        [{ messages: hi, frequency_penalty: -2.5 }, "frequency_penalty"],
        [{ messages: hi, logit_bias: { "5": 101 } }, "logit_bias.5"],
        [{ messages: hi, logit_bias: { abc: 1 } }, "logit_bias"],
        [{ messages: hi, logit_bias: { "999999": 1 } }, "logit_bias"],
        [{ messages: hi, top_logprobs: 2 }, "top_logprobs"],
        [{ messages: hi, logprobs: true, top_logprobs: 21 }, "top_logprobs"],
        [{ messages: hi, max_tokens: 0 }, "max_tokens"],
        [{ messages: hi, max_completion_tokens: 1.5 }, "max_completion_tokens"],
        [{ messages: hi, stream: "yes" }, "stream"],
        [{ messages: [{ role: "user" }] }, "messages[0].content"],
        [{ messages: [{ role: "user", content: 5 }] }, "messages[0].content"],
        [{ messages: [{ role: "tool", content: "x" }] }, "messages[0].tool_call_id"],
        [
          {
            messages: [hi[0], {
              role: "user",
              content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }],
            }],
          },
          "messages[1].content[0].type",
          /image_url/,
        ],
        [
          {
            messages: [{
              role: "user",
              content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }],
            }],
          },
          "messages[0].content[0].type",
        ],
        [{ messages: [{ role: "user", content: [{ type: "text" }] }] }, "messages[0].content[0].text"],
        [{ model: 5, messages: hi }, "model"],
      ];
      for (const [body, param, message] of cases) {
        const err = await badRequest(s, body);
        assert.equal(err.param, param, `${JSON.stringify(body)} -> ${JSON.stringify(err)}`);
        if (message) assert.match(err.message, message);
      }
      const missing = await badRequest(s, { messages: [{ role: "user" }] });
      assert.equal(missing.code, "missing_required_parameter");
    });

    await t.step("over the context window: 400 context_length_exceeded before any streaming", async () => {
      const prompt = await promptTokens(hi);
      let err = await badRequest(s, { messages: hi, max_tokens: CONTEXT - prompt + 1, stream: true });
      assert.equal(err.code, "context_length_exceeded");
      assert.equal(err.param, "messages");
      assert.match(err.message, new RegExp(`maximum context length is ${CONTEXT} tokens`));
      // Exactly filling the window is fine.
      const full = await s.client.chat.completions.create({
        model: MODEL,
        messages: forever as never,
        max_tokens: CONTEXT - (await promptTokens(forever)),
      });
      assert.equal(full.usage?.total_tokens, CONTEXT);
      assert.equal(full.choices[0].finish_reason, "length");
      // A prompt alone over the window.
      const long = "Hi there! ".repeat(400);
      err = await badRequest(s, { messages: [{ role: "user", content: long }] });
      assert.equal(err.code, "context_length_exceeded");
    });

    await t.step("unknown model 404; a model of another task 400", async () => {
      const res = await postRaw(
        `${s.url}/v1/chat/completions`,
        JSON.stringify({ model: "nope", messages: hi }),
      );
      assert.equal(res.status, 404);
      assert.equal(errorOf(res.json).code, "model_not_found");
      const err = await badRequest(s, { model: "embed-tiny", messages: hi });
      assert.equal(err.param, "model");
    });

    await t.step(
      "an aborted stream frees the model at once: the queued request completes promptly",
      async () => {
        // The default --parallel (4) streams fill the model's generation slots.
        const held = await Promise.all(Array.from({ length: 4 }, () => holdStream(s, 2)));
        // The streams are now paused by backpressure, holding the model; the next request queues behind them.
        const next = s.client.chat.completions.create({ model: MODEL, messages: hi as never });
        await new Promise((r) => setTimeout(r, 100));
        const queue = s.server.registry.queues().find((q) => q.model === MODEL)!;
        assert.deepEqual({ active: queue.active, waiting: queue.waiting }, { active: 4, waiting: 1 });
        const aborted = performance.now();
        held[0].ctrl.abort();
        await held[0].reader.cancel().catch(() => {});
        const answer = await next;
        const waited = performance.now() - aborted;
        assert.equal(answer.choices[0].message.content, HELLO);
        assert.ok(waited < 2000, `the next request waited ${waited.toFixed(0)} ms after the abort`);
        // The aborted generation stopped within a few tokens of the abort, far short of its 900.
        const rec = s.records.find((r) =>
          r.path === "/v1/chat/completions" && r.completionTokens !== undefined &&
          r.completionTokens > 0 && r.completionTokens < 900 && r.status === 200 && r.seconds > 0.1
        );
        assert.ok(rec, "no record of the aborted stream");
        assert.ok(rec.completionTokens! < 50, `aborted stream generated ${rec.completionTokens} tokens`);
        for (const h of held.slice(1)) h.ctrl.abort(), await h.reader.cancel().catch(() => {});
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(
          s.server.registry.queues().find((q) => q.model === MODEL),
          { model: MODEL, active: 0, waiting: 0 },
        );
      },
    );
  } finally {
    await s.close();
  }
});

Deno.test("chat completions: a full queue answers 429 with Retry-After", async () => {
  // One generation at a time (--parallel=1), so one stream fills the model and --queue-size=0 leaves no room.
  const s = await startTestServer({ flags: ["--queue-size=0", "--parallel=1"] });
  try {
    const { ctrl, reader } = await holdStream(s, 1);
    const busy = await postRaw(
      `${s.url}/v1/chat/completions`,
      JSON.stringify({ model: MODEL, messages: hi }),
    );
    assert.equal(busy.status, 429);
    assert.match(busy.headers.get("retry-after") ?? "", /^\d+$/);
    const err = errorOf(busy.json);
    assert.equal(err.type, "rate_limit_error");
    // Streams are refused the same way, with a real status rather than an SSE error.
    const busyStream = await postRaw(
      `${s.url}/v1/chat/completions`,
      JSON.stringify({ model: MODEL, messages: hi, stream: true }),
    );
    assert.equal(busyStream.status, 429);
    ctrl.abort();
    await reader.cancel().catch(() => {});
    // Once the stream is gone the model serves again.
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      const r = await postRaw(`${s.url}/v1/chat/completions`, JSON.stringify({ model: MODEL, messages: hi }));
      ok = r.status === 200;
      if (!ok) await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(ok);
  } finally {
    await s.close();
  }
});

Deno.test("chat completions: several models at once; one that can't load answers 503 and the rest keep working", async () => {
  const s = await startTestServer({
    manifest: {
      defaults: { chat: MODEL },
      aliases: {},
      models: {
        [MODEL]: { task: "chat", path: "generated/chat-tiny", dtype: "fp32", device: "cpu" },
        "chat-tiny-q4": { task: "chat", path: "generated/chat-tiny", dtype: "q4", device: "cpu" },
        "chat-absent": { task: "chat", repo: "acme/absent-chat-model", dtype: "q4", device: "cpu" },
      },
    },
  });
  try {
    // Both loaded models answer, concurrently, each from its own queue.
    const [a, b] = await Promise.all([
      s.client.chat.completions.create({ model: MODEL, messages: hi as never }),
      s.client.chat.completions.create({ model: "chat-tiny-q4", messages: hi as never }),
    ]);
    assert.equal(a.choices[0].message.content, HELLO);
    assert.equal(b.choices[0].message.content, HELLO);
    assert.equal(b.model, "chat-tiny-q4");
    const queues = s.server.registry.queues().map((q) => q.model).sort();
    assert.deepEqual(queues, [MODEL, "chat-tiny-q4"]);
    // The absent one: 503 naming the missing files and how to get them, streamed or not.
    for (const stream of [false, true]) {
      const res = await postRaw(
        `${s.url}/v1/chat/completions`,
        JSON.stringify({ model: "chat-absent", messages: hi, stream }),
      );
      assert.equal(res.status, 503);
      const err = errorOf(res.json);
      assert.match(err.message, /onnx\/model_q4\.onnx/);
      assert.match(err.message, /acme\/absent-chat-model/);
    }
    const again = await s.client.chat.completions.create({ model: MODEL, messages: hi as never });
    assert.equal(again.choices[0].message.content, HELLO);
  } finally {
    await s.close();
  }
});

Deno.test("chat completions: streams generate together and later turns reuse the cached prefix (ONNX)", async () => {
  const s = await startTestServer({ flags: ["--parallel=8"] });
  try {
    // The second turn used below, answered first, with nothing cached yet.
    const first: Msg[] = [{ role: "system", content: "You are terse." }, ...hi];
    const second: Msg[] = [...first, { role: "assistant", content: HELLO }, {
      role: "user",
      content: "Count forever",
    }];
    const cold = await s.client.chat.completions.create({
      model: MODEL,
      messages: second as never,
      max_tokens: 10,
    });
    assert.equal(cold.usage!.prompt_tokens_details!.cached_tokens, 0);
    // Eight streams at once, each with exactly its reply.
    await assertStreamsTogether(s, { model: MODEL, count: 8 });

    // A second turn: the first turn's prompt and reply (all but its last token) come from the cache.
    const r1 = await s.client.chat.completions.create({ model: MODEL, messages: first as never });
    const r2 = await s.client.chat.completions.create({
      model: MODEL,
      messages: second as never,
      max_tokens: 10,
    });
    assert.equal(
      r2.usage!.prompt_tokens_details!.cached_tokens,
      r1.usage!.prompt_tokens + r1.usage!.completion_tokens - 1,
    );
    assert.equal(r2.choices[0].message.content, cold.choices[0].message.content);
    assert.equal(r2.usage!.prompt_tokens, cold.usage!.prompt_tokens);
  } finally {
    await s.close();
  }
});
