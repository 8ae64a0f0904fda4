// Unit tests of the Messages route's HTTP side with a fake chat engine (the real engines are in
// tests/e2e/messages_test.ts): a failure after the first byte is one `event: error` frame in Anthropic's
// envelope and then the stream's end; a failure before it keeps its real status; Anthropic's error mapper.
import assert from "node:assert/strict";
import { createApp } from "../app.ts";
import { parseConfig } from "../config.ts";
import { parseManifest } from "../engines/manifest.ts";
import { Registry } from "../engines/registry.ts";
import { memoryLogger } from "../log.ts";
import { EngineFailed, InvalidRequest, QueueFull } from "../errors.ts";
import { ApiError } from "../http/errors.ts";
import { toAnthropicError } from "../http/anthropic_errors.ts";
import type { AnyEngine, ChatEngine, ChatEvent, ChatJob, ModelEntry } from "../engines/types.ts";

function fakeChat(entry: ModelEntry, run: (job: ChatJob) => AsyncIterable<ChatEvent>): AnyEngine {
  const engine: ChatEngine = {
    entry,
    backend: "fake",
    contextLength: 1000,
    chat: (job) => run(job),
    countTokens: () => Promise.resolve(3),
    dispose: () => Promise.resolve(),
  };
  return engine as unknown as AnyEngine;
}

function app(run: (job: ChatJob) => AsyncIterable<ChatEvent>) {
  const config = parseConfig([], {}, "/").config!;
  const log = memoryLogger();
  const manifest = parseManifest({ models: { m: { task: "chat", path: "m" } } }, "/models", "cpu");
  const registry = new Registry(manifest, {
    transformers: { chat: (e) => Promise.resolve(fakeChat(e, run)) },
  }, {
    modelsDir: "/models",
    threads: 1,
    allowRemote: false,
    log,
  }, { loadWaitMs: 1000, queueSize: 2 });
  return createApp({ config, registry, log });
}

const request = (body: unknown) =>
  new Request("http://x/v1/messages", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

const BODY = { model: "m", max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] };

Deno.test("messages: a failure after the first byte is one error event, then the stream ends", async () => {
  const handler = app(async function* () {
    yield { type: "prompt", promptTokens: 3, cachedTokens: 0 };
    yield { type: "start", choice: 0 };
    yield { type: "delta", choice: 0, delta: { content: "Hel" }, logprobs: null, tokens: 1 };
    throw new EngineFailed("model `m`: its worker died (GGML_ASSERT(n_embd_head == n_rot) failed)");
  });
  const res = await handler(request(BODY));
  assert.equal(res.status, 200);
  const frames = (await res.text()).trim().split("\n\n");
  const last = frames.at(-1)!.split("\n");
  assert.equal(last[0], "event: error");
  const data = JSON.parse(last[1].slice(6));
  assert.equal(data.type, "error");
  assert.equal(data.error.type, "api_error");
  assert.match(data.error.message, /GGML_ASSERT/);
  assert.deepEqual(
    frames.slice(0, -1).map((f) => f.split("\n")[0]),
    ["event: message_start", "event: content_block_start", "event: ping", "event: content_block_delta"],
  );
});

Deno.test("messages: a failure before the first event keeps its status, in Anthropic's envelope", async () => {
  const handler = app(async function* () {
    yield* [];
    throw new InvalidRequest("This model's maximum context length is 1000 tokens.", "messages");
  });
  const res = await handler(request(BODY));
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "invalid_request_error");
  assert.match(body.error.message, /^messages: This model's maximum context length/);
});

Deno.test("anthropic errors: types by status; a full queue is 529 overloaded_error with Retry-After", () => {
  const cases: [unknown, number, string][] = [
    [ApiError.badRequest("bad", "temperature"), 400, "invalid_request_error"],
    [new ApiError({ status: 401, message: "no key" }), 401, "authentication_error"],
    [new ApiError({ status: 403, message: "no" }), 403, "permission_error"],
    [ApiError.notFound("gone"), 404, "not_found_error"],
    [new ApiError({ status: 413, message: "big" }), 413, "request_too_large"],
    [new ApiError({ status: 429, message: "slow down", code: "per_key" }), 429, "rate_limit_error"],
    [new QueueFull(2, "Model `m`"), 529, "overloaded_error"],
    [new Error("secret"), 500, "api_error"],
    [new EngineFailed("died"), 503, "api_error"],
  ];
  for (const [err, status, type] of cases) {
    const e = toAnthropicError(err);
    assert.equal(e.status, status, String(err));
    assert.equal(e.type, type, String(err));
  }
  assert.equal(toAnthropicError(new QueueFull(2, "Model `m`")).headers["retry-after"], "2");
  assert.equal(toAnthropicError(ApiError.badRequest("bad value", "top_k")).message, "top_k: bad value");
  assert.ok(!toAnthropicError(new Error("secret")).message.includes("secret"));
});
