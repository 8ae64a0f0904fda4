// Owns the end-to-end check that a chat model generates several streams together: the same prompts asked one
// by one (the expected replies), then `count` streams at once while the model's queue is watched.
import assert from "node:assert/strict";
import type { TestServer } from "../helpers.ts";

export const STREAM_PROMPTS = [
  "Hi there!",
  "Count forever",
  "What's the weather in Paris?",
  "Say something in unicode",
];

/**
 * Asks `reference` each prompt alone, then streams `count` of them (round robin) from `model` at once: every
 * stream must get exactly the reference reply, and the queue must have admitted more than one at a time.
 */
export async function assertStreamsTogether(
  s: TestServer,
  opts: {
    model: string;
    reference?: string;
    count: number;
    maxTokens?: number;
    /** Sampled instead of greedy: each prompt with a seed of its own. */
    temperature?: number;
  },
): Promise<void> {
  const maxTokens = opts.maxTokens ?? 20;
  const sampling = (p: string) =>
    opts.temperature === undefined
      ? {}
      : { temperature: opts.temperature, seed: 100 + STREAM_PROMPTS.indexOf(p) };
  const expected = new Map<string, string>();
  for (const p of STREAM_PROMPTS) {
    const r = await s.client.chat.completions.create({
      model: opts.reference ?? opts.model,
      messages: [{ role: "user", content: p }],
      max_tokens: maxTokens,
      ...sampling(p),
    });
    expected.set(p, r.choices[0].message.content ?? "");
  }
  let mostActive = 0;
  let running = true;
  const watch = (async () => {
    while (running) {
      const q = s.server.registry.queues().find((q) => q.model === opts.model);
      mostActive = Math.max(mostActive, q?.active ?? 0);
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  const results = await Promise.all(Array.from({ length: opts.count }, async (_, i) => {
    const p = STREAM_PROMPTS[i % STREAM_PROMPTS.length];
    const stream = await s.client.chat.completions.create({
      model: opts.model,
      messages: [{ role: "user", content: p }],
      max_tokens: maxTokens,
      ...sampling(p),
      stream: true,
    });
    let text = "";
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? "";
    return [p, text] as const;
  }));
  running = false;
  await watch;
  for (const [p, text] of results) assert.equal(text, expected.get(p), p);
  assert.ok(mostActive > 1, `generations overlapped (${mostActive} at once)`);
}
