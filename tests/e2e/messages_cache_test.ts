// End to end: the prompt cache under agent traffic on the Messages API, with agent-tiny (a 64k-context GGUF
// through llama.cpp) and Claude-Code-shaped requests (tests/support/agent_request.ts: a billing header that
// changes every request first, long system blocks and tools, a system role message). A second turn reuses the
// whole earlier prompt (cache_read_input_tokens) and answers its first token far sooner; `cache_control`
// keeps a marked prompt cached while unmarked traffic passes through the model's one cache slot. It compares
// two times to the first token, so `deno task test` runs it on its own, after the parallel suites.
import assert from "node:assert/strict";
import { GENERATED_MODELS, startTestServer, type TestServer } from "../helpers.ts";
import { agentRequest } from "../support/agent_request.ts";
import { AGENT_REPLIES } from "../../tools/models/agent_tiny.ts";

const AGENT = {
  task: "chat" as const,
  path: "generated/agent-tiny/gguf/agent-tiny-F32.gguf",
  options: { context_length: 32768 },
};

async function withServer(fn: (s: TestServer) => Promise<void>) {
  const s = await startTestServer({
    manifest: { ...GENERATED_MODELS, models: { ...GENERATED_MODELS.models, "agent-tiny": AGENT } },
    // One cache slot for unmarked prompts: what a small server keeps.
    flags: ["--parallel=1"],
  });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

interface Turn {
  text: string;
  /** Seconds from sending the request to the first content block. */
  ttft: number;
  usage: Record<string, number>;
  stopReason: string;
}

/** Streams one request and reads its events: the reply's text, the time to its first block, the usage. */
async function turn(s: TestServer, body: Record<string, unknown>): Promise<Turn> {
  const started = performance.now();
  const res = await fetch(`${s.url}/v1/messages?beta=true`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "any" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.clone().text());
  let ttft = 0;
  let text = "";
  let usage: Record<string, number> = {};
  let stopReason = "";
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of res.body!) {
    buf += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const data = JSON.parse(buf.slice(0, cut).split("\n")[1].slice(6));
      buf = buf.slice(cut + 2);
      if (data.type === "content_block_start" && !ttft) ttft = (performance.now() - started) / 1000;
      if (data.type === "content_block_delta" && data.delta.type === "text_delta") text += data.delta.text;
      if (data.type === "message_delta") usage = data.usage, stopReason = data.delta.stop_reason;
    }
  }
  return { text, ttft, usage, stopReason };
}

const total = (u: Record<string, number>) =>
  u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;

Deno.test("messages cache: a second Claude-Code-shaped turn reuses the first turn's prompt", async () => {
  await withServer(async (s) => {
    const first = await turn(s, agentRequest("agent-tiny", { turn: 1 }));
    assert.equal(first.text, AGENT_REPLIES.default);
    assert.equal(first.stopReason, "end_turn");
    const prompt1 = total(first.usage);
    assert.ok(prompt1 > 4000, `a long agent prompt: ${prompt1} tokens`);
    assert.ok(first.usage.cache_read_input_tokens < 50, JSON.stringify(first.usage));
    // marked with cache_control: what was not read from the cache was written to it
    assert.equal(first.usage.input_tokens, 0);

    // The next turn: a new billing header, the same system prompt and tools, the conversation grown by one turn.
    const second = await turn(
      s,
      agentRequest("agent-tiny", {
        turn: 2,
        history: [
          { role: "assistant", content: AGENT_REPLIES.default },
          { role: "user", content: "Hi there again!" },
        ],
      }),
    );
    assert.equal(second.text, AGENT_REPLIES.default);
    const reused = second.usage.cache_read_input_tokens;
    assert.ok(
      reused >= prompt1 - 1,
      `second turn read ${reused} of the first's ${prompt1} tokens from the cache`,
    );
    assert.ok(
      second.ttft < first.ttft / 3,
      `second turn's first token after ${second.ttft.toFixed(3)} s, the first turn's after ${
        first.ttft.toFixed(3)
      } s`,
    );
    console.log(
      `agent-tiny, ${prompt1}-token Claude-Code-shaped prompt: TTFT ${first.ttft.toFixed(3)} s cold, ` +
        `${second.ttft.toFixed(3)} s on the second turn (${reused} tokens from the cache)`,
    );
  });
});

Deno.test("messages cache: cache_control keeps a marked prompt cached past unmarked requests", async () => {
  for (const cacheControl of [true, false]) {
    await withServer(async (s) => {
      const first = await turn(s, agentRequest("agent-tiny", { turn: 1, cacheControl }));
      // Unmarked traffic in between, with a prompt of its own (the one slot for unmarked prompts turns over).
      const other = await turn(s, {
        model: "agent-tiny",
        max_tokens: 20,
        stream: true,
        messages: [{ role: "user", content: "Hi there!" }],
      });
      assert.equal(other.text, AGENT_REPLIES.default);
      const again = await turn(s, agentRequest("agent-tiny", { turn: 2, cacheControl }));
      const reused = again.usage.cache_read_input_tokens;
      if (cacheControl) {
        assert.ok(reused >= total(first.usage) - 200, `marked: ${reused} tokens read from the cache`);
        assert.equal(again.usage.cache_creation_input_tokens, total(again.usage) - reused);
      } else {
        assert.ok(reused < 50, `unmarked: ${reused} tokens read from the cache (the slot went to the other)`);
        assert.equal(again.usage.cache_creation_input_tokens, 0);
        assert.equal(again.usage.input_tokens, total(again.usage) - reused);
      }
    });
  }
});
