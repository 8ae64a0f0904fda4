// End to end: the legacy POST /v1/completions on the real server with chat-tiny (CPU), through the official
// `openai` client and raw fetch. chat-tiny continues a raw prompt that ends in a reply token ("Hello" ->
// " from chat-tiny!") and starts its default reply after any other text (tools/models/README.md), so texts,
// token counts, echo, legacy logprobs, n times several prompts, token-id prompts, stop, streaming and the
// 400s are all exact.
import assert from "node:assert/strict";
import { errorOf, postRaw, startTestServer, type TestServer } from "../helpers.ts";
import { encode } from "../support/chat_tiny_tokens.ts";

const MODEL = "chat-tiny";
const TAIL = " from chat-tiny!";
const HELLO = "Hello from chat-tiny!";

async function badRequest(s: TestServer, body: Record<string, unknown>) {
  const res = await postRaw(`${s.url}/v1/completions`, JSON.stringify({ model: MODEL, ...body }));
  assert.equal(res.status, 400, `${JSON.stringify(body)} -> ${res.status} ${JSON.stringify(res.json)}`);
  const err = errorOf(res.json);
  assert.equal(err.type, "invalid_request_error");
  return err;
}

Deno.test("completions e2e", async (t) => {
  const s = await startTestServer();
  try {
    await t.step(
      "a raw prompt is continued without the chat template; exact text, usage and shape",
      async () => {
        const r = await s.client.completions.create({ model: MODEL, prompt: "Hello" });
        assert.match(r.id, /^cmpl-[A-Za-z0-9]{29}$/);
        assert.equal(r.object, "text_completion");
        assert.equal(r.model, MODEL);
        assert.match(r.system_fingerprint ?? "", /^fp_[0-9a-f]{8}$/);
        assert.deepEqual(r.choices, [{ text: TAIL, index: 0, logprobs: null, finish_reason: "stop" }]);
        assert.deepEqual(r.usage, { prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 });
        const other = await s.client.completions.create({ model: MODEL, prompt: "Once upon a time" });
        assert.equal(other.choices[0].text, HELLO);
        assert.equal(other.usage?.prompt_tokens, (await encode("Once upon a time")).length);
      },
    );

    await t.step("max_tokens defaults to 16 as OpenAI's does; stop sequences end the text", async () => {
      const r = await s.client.completions.create({ model: MODEL, prompt: "Count forever" });
      assert.equal(r.choices[0].finish_reason, "length");
      assert.equal(r.usage?.completion_tokens, 16);
      assert.match(r.choices[0].text, /^Tick( tock tick)* tock$/);
      const stopped = await s.client.completions.create({ model: MODEL, prompt: "Hello", stop: [" chat"] });
      assert.deepEqual([stopped.choices[0].text, stopped.choices[0].finish_reason], [" from", "stop"]);
      const zero = await s.client.completions.create({
        model: MODEL,
        prompt: "Hello",
        max_tokens: 0,
        echo: true,
      });
      assert.deepEqual([zero.choices[0].text, zero.usage?.completion_tokens], ["Hello", 0]);
    });

    await t.step(
      "echo with logprobs: the prompt's tokens first (the first has none), offsets into the text",
      async () => {
        const r = await s.client.completions.create({
          model: MODEL,
          prompt: "Hello",
          echo: true,
          logprobs: 2,
        });
        const c = r.choices[0];
        assert.equal(c.text, HELLO);
        const lp = c.logprobs!;
        // The prompt's tokens, the reply's, and end-of-sequence (as the tokenizer spells it, at the end).
        assert.deepEqual(lp.tokens, ["Hello", " from", " chat", "-tiny", "!", "<|im_end|>"]);
        assert.deepEqual(lp.text_offset, [0, 5, 10, 15, 20, 21]);
        assert.equal(lp.token_logprobs![0], null);
        assert.equal(lp.top_logprobs![0], null);
        for (let i = 1; i < 5; i++) {
          // chat-tiny's chosen token stands ~10 logits above each of the other 1169: a logprob near 0.
          assert.ok(
            lp.token_logprobs![i]! > -0.1 && lp.token_logprobs![i]! <= 0,
            String(lp.token_logprobs![i]),
          );
          const top = lp.top_logprobs![i]!;
          assert.equal(Object.keys(top).length, 2);
          assert.equal(top[lp.tokens![i]], lp.token_logprobs![i]);
        }
        const plain = await s.client.completions.create({ model: MODEL, prompt: "Hello", logprobs: 0 });
        assert.deepEqual(plain.choices[0].logprobs?.tokens, [" from", " chat", "-tiny", "!", "<|im_end|>"]);
        assert.deepEqual(plain.choices[0].logprobs?.text_offset, [0, 5, 10, 15, 16]);
        assert.deepEqual(plain.choices[0].logprobs?.top_logprobs, [{}, {}, {}, {}, {}]);
        assert.equal(plain.choices[0].logprobs?.tokens?.length, plain.usage!.completion_tokens);
      },
    );

    await t.step(
      "several prompts times n: one choice per prompt and sample, indexed prompt by prompt",
      async () => {
        const r = await s.client.completions.create({
          model: MODEL,
          prompt: ["Hello", "Once upon a time"],
          n: 2,
        });
        assert.deepEqual(r.choices.map((c) => [c.index, c.text]), [[0, TAIL], [1, TAIL], [2, HELLO], [
          3,
          HELLO,
        ]]);
        const promptTokens = 1 + (await encode("Once upon a time")).length;
        assert.deepEqual(r.usage, {
          prompt_tokens: promptTokens,
          completion_tokens: 22,
          total_tokens: promptTokens + 22,
        });
      },
    );

    await t.step("token-id prompts: one list, or a list of lists", async () => {
      const ids = await encode("Hello");
      const one = await s.client.completions.create({ model: MODEL, prompt: ids });
      assert.equal(one.choices[0].text, TAIL);
      const two = await s.client.completions.create({ model: MODEL, prompt: [ids, await encode("Hi")] });
      assert.deepEqual(two.choices.map((c) => c.text), [TAIL, HELLO]);
      const echoed = await s.client.completions.create({
        model: MODEL,
        prompt: ids,
        echo: true,
        max_tokens: 1,
      });
      assert.equal(echoed.choices[0].text, "Hello from");
    });

    await t.step(
      "streamed: text_completion chunks, a finish chunk, the usage chunk, then [DONE]",
      async () => {
        const stream = await s.client.completions.create({
          model: MODEL,
          prompt: "Hello",
          echo: true,
          stream: true,
          stream_options: { include_usage: true },
        });
        let text = "";
        const finishes: (string | null)[] = [];
        let usage;
        for await (const chunk of stream) {
          assert.equal(chunk.object, "text_completion");
          for (const c of chunk.choices) {
            text += c.text;
            finishes.push(c.finish_reason);
          }
          usage = chunk.usage ?? usage;
        }
        assert.equal(text, HELLO);
        assert.equal(finishes.at(-1), "stop");
        assert.ok(finishes.slice(0, -1).every((f) => f === null));
        assert.deepEqual(usage, { prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 });
        const raw = await fetch(`${s.url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: MODEL, prompt: "Hello", stream: true }),
        });
        const frames = (await raw.text()).split("\n\n").filter(Boolean);
        assert.equal(frames.at(-1), "data: [DONE]");
      },
    );

    await t.step("bad input: 400s naming the parameter", async () => {
      assert.equal((await badRequest(s, {})).param, "prompt");
      assert.equal((await badRequest(s, { prompt: "Hi", logprobs: 6 })).param, "logprobs");
      assert.equal((await badRequest(s, { prompt: "Hi", best_of: 3 })).param, "best_of");
      assert.equal((await badRequest(s, { prompt: [[-1]] })).param, "prompt[0][0]");
      assert.equal((await badRequest(s, { prompt: [999999] })).param, "prompt");
      assert.equal((await badRequest(s, { prompt: "Hi", stop: ["a", "b", "c", "d", "e"] })).param, "stop");
      assert.equal((await badRequest(s, { prompt: "Hi", max_tokens: 5000 })).code, "context_length_exceeded");
      const fim = await badRequest(s, { prompt: "def f(", suffix: "\n  return x" });
      assert.deepEqual([fim.param, fim.code], ["suffix", "unsupported_value"]);
      assert.equal((await badRequest(s, { prompt: "Hi", suffix: "x", echo: true })).param, "echo");
      // Token ids have no text to build a fill-in-the-middle prompt around: refused, not dropped.
      const ids = await badRequest(s, { prompt: [1, 2, 3], suffix: "x" });
      assert.deepEqual([ids.param, ids.code], ["suffix", "invalid_value"]);
      assert.equal((await badRequest(s, { prompt: "Hi", logit_bias: { "99999": 1 } })).param, "logit_bias");
      // The server keeps serving.
      const ok = await s.client.completions.create({ model: MODEL, prompt: "Hello" });
      assert.equal(ok.choices[0].text, TAIL);
    });
  } finally {
    await s.close();
  }
});
