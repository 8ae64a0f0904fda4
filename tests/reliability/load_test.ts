// Load: 64 concurrent streaming chats and 64 concurrent embedding requests against one server process.
// Every request completes correctly or gets 429 with Retry-After, none gets a 5xx, and the server's memory
// comes back: later identical rounds must not grow the resident set by LEAK_KB per request or more.
import assert from "node:assert/strict";
import { chatStreamLoad, embeddingLoad, type LoadResult } from "../../bench/load.ts";
import { spawnServer } from "../helpers.ts";

const MB = 1024 * 1024;
/** Rounds that warm the server up after the first, then rounds whose growth is measured. */
const WARM_ROUNDS = 3;
const LATER_ROUNDS = 8;
/** Largest growth of the resident set per request served in the measured rounds that passes. */
const LEAK_KB = 8;

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
  // V8 collects lazily: with room to spare its heap grows for thousands of requests before a full collection,
  // which looks like a leak. A small old space makes it collect as it goes, so only memory still referenced
  // (a real leak, JS or native) keeps growing.
  const server = await spawnServer({
    flags: ["--queue-size=40"],
    denoFlags: ["-A", "--v8-flags=--max-old-space-size=48"],
  });
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
      return c.ok + e.ok;
    };
    // Warm up (model loads), then take the baseline.
    await chatStreamLoad(server.url, 2, chat, "Hello from chat-tiny!");
    await embeddingLoad(server.url, 2, "embed-tiny", sentences);
    const baseline = await server.rss();
    await round();
    const afterFirst = await server.rss();
    let served = 0;
    for (let i = 0; i < WARM_ROUNDS; i++) await round();
    const warm = await server.rss();
    for (let i = 0; i < LATER_ROUNDS; i++) served += await round();
    await new Promise((r) => setTimeout(r, 500));
    const afterLast = await server.rss();
    const perRequest = Math.max(0, afterLast - warm) / served;
    console.log(
      `rss: baseline ${(baseline / MB).toFixed(0)} MB, after 1 round ${(afterFirst / MB).toFixed(0)} MB, ` +
        `warm ${(warm / MB).toFixed(1)} MB, after ${LATER_ROUNDS} more ${(afterLast / MB).toFixed(1)} MB: ${
          (perRequest / 1024).toFixed(2)
        } KB per served request over ${served}`,
    );
    // The first rounds raise the resident set (allocator pages, JIT, caches filling); after them, the growth
    // per request served must stay under LEAK_KB: a leak of that much per request or more fails (measured
    // here: about 3 KB, allocator slack).
    assert.ok(perRequest < LEAK_KB * 1024, `memory grows ${(perRequest / 1024).toFixed(1)} KB per request`);
    assert.ok(afterLast < baseline + 200 * MB, "memory far above baseline");
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    const status = await server.stop();
    assert.equal(status.code, 0);
  }
});
