// Disconnect storm: 100 streaming chats aborted at random points (before the headers, after a few chunks,
// mid-stream). Generation must stop, the queue must drain, the next request must be served promptly, and
// nothing may leak: this file runs with Deno's op and resource sanitizers on, under --trace-leaks in the
// test task.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers.ts";

/** A small seeded PRNG so the storm is the same every run. */
function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function queueDepth(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^oai_queue_depth\{model="chat-tiny",state="\w+"\} (\d+)$/gm)) {
    total += Number(m[1]);
  }
  return total;
}

Deno.test("disconnect storm: 100 aborted streams stop generating, drain the queue, leak nothing", async () => {
  const t = await startTestServer({ flags: ["--queue-size=200"] });
  try {
    const random = mulberry32(1234);
    const body = JSON.stringify({
      model: "chat-tiny",
      messages: [{ role: "user", content: "Count forever" }],
      max_tokens: 800,
      stream: true,
    });
    let aborted = 0;
    for (let wave = 0; wave < 10; wave++) {
      await Promise.all(Array.from({ length: 10 }, async () => {
        const ac = new AbortController();
        const chunksBeforeAbort = Math.floor(random() * 12) - 2; // < 0: abort before the response
        if (chunksBeforeAbort < 0) setTimeout(() => ac.abort(), Math.floor(random() * 5));
        try {
          const res = await fetch(`${t.url}/v1/chat/completions`, {
            method: "POST",
            body,
            headers: { "content-type": "application/json" },
            signal: ac.signal,
          });
          const reader = res.body!.getReader();
          for (let i = 0; i < chunksBeforeAbort; i++) {
            if ((await reader.read()).done) break;
          }
          ac.abort();
          await reader.cancel().catch(() => {});
        } catch (e) {
          assert.equal((e as Error).name, "AbortError");
        }
        aborted++;
      }));
    }
    assert.equal(aborted, 100);

    // The queue drains: every aborted generation released its slot.
    const deadline = Date.now() + 10_000;
    while ((await queueDepth(t.url)) > 0) {
      assert.ok(Date.now() < deadline, "queue did not drain");
      await new Promise((r) => setTimeout(r, 50));
    }

    // Generation stopped: far fewer tokens were produced than 100 full runs would have.
    const chatRecords = t.records.filter((r) => r.route === "/v1/chat/completions");
    const produced = chatRecords.reduce((n, r) => n + (r.completionTokens ?? 0), 0);
    console.log(`aborted streams produced ${produced} tokens over ${chatRecords.length} requests`);
    assert.ok(produced > 0, "token counts of aborted streams are recorded");
    assert.ok(produced < 100 * 800 / 10, `aborted streams produced ${produced} tokens`);

    // And the next request is served promptly.
    const started = performance.now();
    const reply = await t.client.chat.completions.create({
      model: "chat-tiny",
      messages: [{ role: "user", content: "Hi there!" }],
    });
    assert.equal(reply.choices[0].message.content, "Hello from chat-tiny!");
    const seconds = (performance.now() - started) / 1000;
    assert.ok(seconds < 2, `next request took ${seconds.toFixed(2)} s`);
  } finally {
    await t.close();
  }
});
