// Load: 64 concurrent streaming chats and 64 concurrent embedding requests against one server process.
// Every request completes correctly or gets 429 with Retry-After, none gets a 5xx, and the server's memory
// comes back: a second identical round must not grow the resident set past the first round's level.
import assert from "node:assert/strict";
import { chatStreamLoad, embeddingLoad, type LoadResult } from "../../bench/load.ts";
import { spawnServer } from "../helpers.ts";

const MB = 1024 * 1024;

function check(name: string, r: LoadResult, n: number): void {
  assert.equal(r.failed.length, 0, `${name}: ${JSON.stringify(r.failed.slice(0, 3))}`);
  assert.equal(r.ok + r.rejected, n);
  assert.ok(r.ok > 0, `${name}: nothing succeeded`);
  console.log(
    `${name}: ${r.ok} ok, ${r.rejected} × 429, p50 ${(r.p50 * 1000).toFixed(0)} ms, p99 ${
      (r.p99 * 1000).toFixed(0)
    } ms, wall ${r.wallSeconds.toFixed(2)} s`,
  );
}

Deno.test("load: 64 streaming chats + 64 embedding requests at once; no 5xx; memory returns", async () => {
  // A queue shorter than the burst, so the 429 path is exercised along with the served one.
  const server = await spawnServer({ flags: ["--queue-size=40"] });
  try {
    const chat = { model: "chat-tiny", messages: [{ role: "user", content: "Hi there!" }] };
    const sentences = ["the quick brown fox jumps over the lazy dog", "load testing a local server"];
    const round = async () => {
      const [c, e] = await Promise.all([
        chatStreamLoad(server.url, 64, chat, "Hello from chat-tiny!"),
        embeddingLoad(server.url, 64, "embed-tiny", sentences),
      ]);
      check("chat", c, 64);
      check("embeddings", e, 64);
    };
    // Warm up (model loads), then take the baseline.
    await chatStreamLoad(server.url, 2, chat, "Hello from chat-tiny!");
    await embeddingLoad(server.url, 2, "embed-tiny", sentences);
    const baseline = await server.rss();
    await round();
    const afterFirst = await server.rss();
    await round();
    await round();
    await new Promise((r) => setTimeout(r, 500));
    const afterThird = await server.rss();
    console.log(
      `rss: baseline ${(baseline / MB).toFixed(0)} MB, after 1 round ${(afterFirst / MB).toFixed(0)} MB, ` +
        `after 3 rounds ${(afterThird / MB).toFixed(0)} MB`,
    );
    // Allocators keep some pages, so the first round may raise the resident set once; later rounds must not
    // keep raising it (a leak of even a few KB per request would show over 256 more requests).
    assert.ok(afterThird < afterFirst + 48 * MB, "memory keeps growing round after round");
    assert.ok(afterThird < baseline + 200 * MB, "memory far above baseline");
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    const status = await server.stop();
    assert.equal(status.code, 0);
  }
});
