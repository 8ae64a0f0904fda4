// Unit tests of DecodeBatcher's rounds against a recording stand-in for the llama.cpp context: what goes into
// each llama_decode (steps first, prompts one after another), which logits row each caller gets, and failures.
import assert from "node:assert/strict";
import { DecodeBatcher, NO_KV_ROOM, PROMPT_CHUNK } from "./batch.ts";
import type { LlamaContext } from "./ffi.ts";

const VOCAB = 4;

/** Records every batch; each output row's logits are [seq, last position, round, 0], in the row asked for. */
class RecordingContext {
  rounds: { seq: number[]; pos: number[] }[] = [];
  failNext = 0;
  decode(
    tokens: Int32Array,
    pos: Int32Array,
    seq: Int32Array,
    output: Int32Array,
    logits: Float32Array,
  ): number {
    if (this.failNext) {
      const rc = this.failNext;
      this.failNext = 0;
      return rc;
    }
    this.rounds.push({ seq: [...seq], pos: [...pos] });
    for (let i = 0; i < tokens.length; i++) {
      if (output[i] > 0) logits.set([seq[i], pos[i], this.rounds.length, 0], (output[i] - 1) * VOCAB);
    }
    return 0;
  }
}

function batcher(ctx: RecordingContext, open = Infinity, promptRounds = 1) {
  return new DecodeBatcher(ctx as unknown as LlamaContext, 512, VOCAB, () => open, promptRounds);
}

const range = (n: number) => Array.from({ length: n }, (_, i) => 100 + i);

Deno.test("steps and prompts take turns; prompts are read one after another in arrival order", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  const results = await Promise.all([
    b.submit(1, range(100), 0),
    b.submit(2, range(120), 0),
    b.submit(3, [7], 40),
    b.submit(4, [8], 50),
  ]);
  // Round 1: both steps alone; round 2: sequence 1's whole prompt; round 3: sequence 2's.
  assert.deepEqual(ctx.rounds.map((r) => [...new Set(r.seq)]), [[3, 4], [1], [2]]);
  assert.deepEqual(ctx.rounds.map((r) => r.seq.length), [2, 100, 120]);
  // Each caller gets the logits after its own last token.
  assert.deepEqual([...results[0]], [1, 99, 2, 0]);
  assert.deepEqual([...results[1]], [2, 119, 3, 0]);
  assert.deepEqual([...results[2]], [3, 40, 1, 0]);
  assert.deepEqual([...results[3]], [4, 50, 1, 0]);
});

Deno.test("a running stream gets a token after at most promptRounds prompt rounds", async () => {
  for (
    const [promptRounds, want] of [
      [1, "s 1 s 2 s 3 s 4 s 5 s 6 s s"],
      [4, "s 1 2 3 4 s 5 6 s s"],
    ] as const
  ) {
    const ctx = new RecordingContext();
    const b = batcher(ctx, Infinity, promptRounds);
    // Sequence 9 generates: every step it gets back queues its next one at once, as the chat pipeline does.
    let pos = 10;
    const generate = async () => {
      while (pos < 10 + want.split(" ").filter((k) => k === "s").length) await b.submit(9, [1], pos++);
    };
    await Promise.all([generate(), ...[1, 2, 3, 4, 5, 6].map((s) => b.submit(s, range(100), 0))]);
    const kinds = ctx.rounds.map((r) => r.seq.every((s) => s === 9) ? "s" : `${r.seq[0]}`);
    assert.equal(kinds.join(" "), want, `promptRounds ${promptRounds}`);
  }
});

Deno.test("short prompts share a round until it has read PROMPT_CHUNK prompt tokens", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  const short = Math.floor(PROMPT_CHUNK / 3) + 1; // three of them pass the chunk
  await Promise.all([1, 2, 3, 4, 5].map((s) => b.submit(s, range(short), 0)));
  assert.equal(ctx.rounds.length, 2);
  assert.deepEqual([...new Set(ctx.rounds[0].seq)], [1, 2, 3]);
  assert.deepEqual([...new Set(ctx.rounds[1].seq)], [4, 5]);
});

Deno.test("a prompt longer than the batch is read in batch-sized chunks at consecutive positions", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  const logits = await b.submit(1, range(1200), 10);
  assert.deepEqual(ctx.rounds.map((r) => r.seq.length), [512, 512, 176]);
  assert.deepEqual(ctx.rounds.map((r) => r.pos[0]), [10, 522, 1034]);
  assert.deepEqual([...logits], [1, 1209, 3, 0]);
});

Deno.test("a full KV cache or a failed decode fails only the round's own work", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx, Infinity);
  const full = b.submit(1, [5], 3);
  ctx.failNext = NO_KV_ROOM;
  await assert.rejects(full, /KV cache is full/);
  assert.deepEqual([...await b.submit(1, [5], 3)], [1, 3, 1, 0]);
  // A failure that is not about room: the round's work is rejected, later work still runs.
  const doomed = b.submit(2, range(10), 0);
  ctx.failNext = -3;
  await assert.rejects(doomed, /llama_decode failed \(-3\)/);
  assert.deepEqual([...await b.submit(2, range(10), 0)], [2, 9, 2, 0]);
});

Deno.test("when every open sequence has queued work the round starts at once", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx, 1);
  const p = b.submit(1, [5], 0);
  // Synchronously decoded: the round ran inside submit.
  assert.equal(ctx.rounds.length, 1);
  await p;
});

Deno.test("each sequence reads its logits in its own row: no copy per token, untouched by other sequences", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  const [one, two] = await Promise.all([b.submit(1, [5], 3), b.submit(2, [6], 7)]);
  assert.deepEqual([...one], [1, 3, 1, 0]);
  // Other sequences decode (sequence 6 grows the buffer): sequence 1's row is as it was.
  await b.submit(2, [6], 8);
  await b.submit(6, [6], 0);
  assert.deepEqual([...one], [1, 3, 1, 0]);
  assert.deepEqual([...two], [2, 8, 2, 0]);
  // Its next token lands in the same row of the same buffer: the view it had is the view it gets.
  const again = await b.submit(2, [6], 9);
  const next = await b.submit(2, [6], 10);
  assert.equal(next.buffer, again.buffer);
  assert.equal(next.byteOffset, again.byteOffset);
  assert.deepEqual([...again], [2, 10, 5, 0]);
});
