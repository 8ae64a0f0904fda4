// Limits: oversized bodies are refused before they are read whole, slow-loris bodies time out, requests
// that could not fit the context are refused up front, and the per-request wall-clock limit holds for plain
// and streamed answers.
import assert from "node:assert/strict";
import { errorOf, startTestServer } from "../helpers.ts";

const JSON_HEADERS = { "content-type": "application/json" };

Deno.test("limits: bodies over the limit are refused early; slow bodies time out", async () => {
  const t = await startTestServer({ flags: ["--max-json-body=64KB", "--body-timeout-ms=400"] });
  try {
    // 50 MB offered without a content-length: the answer comes after about the limit, not the whole body.
    let sent = 0;
    const chunk = new Uint8Array(16 * 1024).fill(32);
    const huge = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= 50 * 1024 * 1024) return c.close();
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      body: huge,
      headers: JSON_HEADERS,
      duplex: "half",
    } as RequestInit);
    assert.equal(res.status, 413);
    assert.equal(errorOf(await res.json()).code, "request_too_large");
    assert.ok(sent < 5 * 1024 * 1024, `the server read ${sent} bytes before refusing`);

    // A declared length over the limit is refused before any byte is read.
    const declared = await fetch(`${t.url}/v1/embeddings`, {
      method: "POST",
      body: "x".repeat(70_000),
      headers: JSON_HEADERS,
    });
    assert.equal(declared.status, 413);
    await declared.body?.cancel();

    // Slow loris: one byte every 150 ms never finishes within the 400 ms body deadline.
    let stop = false;
    const slow = new ReadableStream<Uint8Array>({
      async pull(c) {
        await new Promise((r) => setTimeout(r, 150));
        if (stop) return c.close();
        c.enqueue(new Uint8Array([32]));
      },
    });
    const started = performance.now();
    const loris = await fetch(`${t.url}/v1/embeddings`, {
      method: "POST",
      body: slow,
      headers: JSON_HEADERS,
      duplex: "half",
    } as RequestInit);
    stop = true;
    assert.equal(loris.status, 408);
    assert.equal(errorOf(await loris.json()).code, "request_timeout");
    assert.ok(performance.now() - started < 3000);
  } finally {
    await t.close();
  }
});

Deno.test("limits: max_tokens beyond the context is refused up front; the wall-clock limit holds", async () => {
  const forever = { model: "chat-tiny", messages: [{ role: "user", content: "Count forever" }] };
  // The refusal on a server without the limit: rendering and counting the prompt took over 100 ms on CI's
  // loaded 2 cores, and the limit answered 408 first.
  const unlimited = await startTestServer();
  try {
    await unlimited.server.registry.load(unlimited.server.registry.resolve("chat-tiny", "chat"));
    const started = performance.now();
    const res = await fetch(`${unlimited.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ ...forever, max_tokens: 5000 }),
    });
    assert.equal(res.status, 400);
    assert.equal(errorOf(await res.json()).code, "context_length_exceeded");
    assert.ok(performance.now() - started < 1000, "refused before generating");
  } finally {
    await unlimited.close();
  }
  // Without max_tokens chat-tiny writes until its 1024-token window is full: about 1000 tokens, which take
  // 0.3 to 1.5 ms each on the machines seen here, so at least three times the 100 ms limit.
  const t = await startTestServer({ flags: ["--request-timeout-ms=100"] });
  try {
    // Load the model outside any request, so only generation counts against the 100 ms limit.
    await t.server.registry.load(t.server.registry.resolve("chat-tiny", "chat"));
    const started = performance.now();
    let res = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify(forever),
    });
    assert.equal(res.status, 408);
    assert.equal(errorOf(await res.json()).code, "request_timeout");
    assert.ok(performance.now() - started < 1200, "the limit stopped the generation");

    // Streamed: the headers are out, so the timeout is one error frame, then [DONE].
    res = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ ...forever, stream: true }),
    });
    assert.equal(res.status, 200);
    const frames = (await res.text()).split("\n\n").filter(Boolean);
    assert.equal(frames.at(-1), "data: [DONE]");
    const last = JSON.parse(frames.at(-2)!.slice(6));
    assert.equal(errorOf(last).code, "request_timeout");

    // The model is free again at once.
    const ok = await t.client.chat.completions.create({
      model: "chat-tiny",
      messages: [{ role: "user", content: "Hi there!" }],
    });
    assert.equal(ok.choices[0].message.content, "Hello from chat-tiny!");
  } finally {
    await t.close();
  }
});
