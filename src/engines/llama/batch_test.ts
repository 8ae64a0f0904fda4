// Unit tests of DecodeBatcher's rounds against a recording stand-in for the llama.cpp context: what goes into
// each llama_decode (every step, then a cohort of prompts sharing the rest; rows by sequence id), which logits
// row each caller gets, and failures.
import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { DecodeBatcher, IO_EVERY_MS, LONE_PROMPT_ROWS, NO_KV_ROOM, PROMPT_COHORT } from "./batch.ts";
import type { LlamaContext } from "./ffi.ts";

const VOCAB = 4;

/** Records every batch; each output row's logits are [seq, last position, round, 0], in the row asked for. */
class RecordingContext {
  rounds: { seq: number[]; pos: number[] }[] = [];
  failNext = 0;
  /** Runs after each recorded round. */
  afterRound: () => void = () => {};
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
    this.afterRound();
    return 0;
  }
}

function batcher(ctx: RecordingContext) {
  return new DecodeBatcher(ctx as unknown as LlamaContext, 512, VOCAB);
}

const range = (n: number) => Array.from({ length: n }, (_, i) => 100 + i);

/** Each round's sequences in batch order, with their row counts: "1x100 3x1". */
const layout = (ctx: RecordingContext) =>
  ctx.rounds.map((r) => {
    const runs: string[] = [];
    for (let i = 0; i < r.seq.length;) {
      let j = i;
      while (j < r.seq.length && r.seq[j] === r.seq[i]) j++;
      runs.push(`${r.seq[i]}x${j - i}`);
      i = j;
    }
    return runs.join(" ");
  });

Deno.test("steps and prompts that fit go in one round, rows ordered by sequence id", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  const results = await Promise.all([
    b.submit(4, [8], 50),
    b.submit(1, range(100), 0),
    b.submit(3, [7], 40),
    b.submit(2, range(120), 0),
  ]);
  assert.deepEqual(layout(ctx), ["1x100 2x120 3x1 4x1"]);
  // Each caller gets the logits after its own last token.
  assert.deepEqual([...results[0]], [4, 50, 1, 0]);
  assert.deepEqual([...results[1]], [1, 99, 1, 0]);
  assert.deepEqual([...results[2]], [3, 40, 1, 0]);
  assert.deepEqual([...results[3]], [2, 119, 1, 0]);
});

Deno.test("a burst of prompts is read together: equal shares of each round, all finished in the same round", async () => {
  // Equal to the token: a round of 512 for three prompts gives 170 each (two left over), not 171, 171, 170.
  const even = new RecordingContext();
  const e = batcher(even);
  await Promise.all([1, 2, 3].map((s) => e.submit(s, range(600), 0)));
  assert.equal(layout(even)[0], "1x170 2x170 3x170");
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  const results = await Promise.all([1, 2, 3, 4].map((s) => b.submit(s, range(300 + s), 0)));
  // 1210 tokens in rounds of 512: 128 each, 128 each, then what is left.
  assert.deepEqual(layout(ctx), [
    "1x128 2x128 3x128 4x128",
    "1x128 2x128 3x128 4x128",
    "1x45 2x46 3x47 4x48",
  ]);
  assert.deepEqual(results.map((r) => r[2]), [3, 3, 3, 3]);
});

Deno.test("a running stream gets a token in every round while prompts are read", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  // Sequence 0 generates: every step it gets back queues its next one at once, as the chat pipeline does.
  let pos = 10;
  let stop = false;
  const generate = async () => {
    while (!stop) await b.submit(0, [1], pos++);
  };
  const gen = generate();
  await Promise.all([1, 2].map((s) => b.submit(s, range(600), 0)));
  stop = true;
  await gen;
  const prompts = layout(ctx).filter((r) => r.includes("1x") || r.includes("2x"));
  assert.deepEqual(prompts, ["0x1 1x255 2x255", "0x1 1x255 2x255", "0x1 1x90 2x90"]);
});

Deno.test("prompts past the cohort wait until every prompt of the cohort is read", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  // 1500 + 700 > PROMPT_COHORT: the second starts only with the budget the first leaves.
  assert.ok(1500 + 700 > PROMPT_COHORT && 1500 <= PROMPT_COHORT);
  await Promise.all([b.submit(1, range(1500), 0), b.submit(2, range(700), 0)]);
  assert.deepEqual(layout(ctx), ["1x512", "1x512", "1x476 2x36", "2x512", "2x152"]);
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
  const b = batcher(ctx);
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

Deno.test("a request arriving while a stream generates is read in the next round, not after the stream", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  // Sequence 0 generates 20 tokens, each step queued as soon as the last one resolved (the only open sequence).
  const generate = async () => {
    for (let pos = 10; pos < 30; pos++) await b.submit(0, [1], pos);
  };
  // A new request arrives as a message (a macrotask) during the first step's round.
  let second: Promise<Float32Array> | undefined;
  const channel = new MessageChannel();
  channel.port1.onmessage = () => second = b.submit(1, range(40), 0);
  ctx.afterRound = () => {
    if (ctx.rounds.length === 1) channel.port2.postMessage(null);
  };
  await generate();
  await second;
  channel.port1.close();
  const joined = layout(ctx).findIndex((r) => r.includes("1x40"));
  assert.ok(
    joined >= 1 && joined <= 2,
    `the prompt was read in round ${joined + 1}: ${layout(ctx).join(" | ")}`,
  );
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

Deno.test("a prompt arriving while a cohort is read joins it when its tokens fit", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  // During the first round, a second request arrives.
  let second: Promise<Float32Array> | undefined;
  ctx.afterRound = () => {
    if (ctx.rounds.length === 1) second = b.submit(2, range(700), 0);
  };
  await Promise.all([b.submit(1, range(1100), 0)]);
  await second;
  assert.deepEqual(layout(ctx), ["1x512", "1x256 2x256", "1x256 2x256", "1x76 2x188"]);
});

Deno.test("what a resolved sequence schedules goes before the next round of work still queued", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  // A short prompt finishes in round 1 while a long one still needs rounds; as the pipeline does, its caller
  // schedules the message with its token (a setImmediate) when it resolves.
  let postedAfterRounds = -1;
  const short = b.submit(1, range(10), 0).then(() =>
    setImmediate(() => postedAfterRounds = ctx.rounds.length)
  );
  await Promise.all([short, b.submit(2, range(1500), 0)]);
  assert.ok(ctx.rounds.length >= 3);
  assert.equal(postedAfterRounds, 1);
});

/** A context whose llama_decode takes `msPerToken` of busy time per token (a model of known speed). */
class TimedContext extends RecordingContext {
  constructor(private readonly msPerToken: number) {
    super();
  }
  override decode(...args: Parameters<RecordingContext["decode"]>): number {
    const until = performance.now() + args[0].length * this.msPerToken;
    while (performance.now() < until) { /* the model computing */ }
    return super.decode(...args);
  }
}

Deno.test("rounds take a whole batch, with every running stream's step in each", async () => {
  // A slow model (0.2 ms a token: a 2048-token round holds a running stream 0.4 s) still reads prompts a
  // batch at a time: fewer, larger rounds read a burst's prompts sooner and cost the running streams less in
  // all than many small ones (a budget of 150 ms did worse on 2 CPU cores, see the round's comment).
  const ctx = new TimedContext(0.2);
  const b = new DecodeBatcher(ctx as unknown as LlamaContext, 2048, VOCAB, 512);
  // A burst of four 600-token prompts with no stream running: one round takes the batch.
  await Promise.all([0, 1, 2, 3].map((s) => b.submit(s, range(600), 0)));
  assert.deepEqual(ctx.rounds.map((r) => r.seq.length).slice(0, 2), [2048, 352]);
  // Now a stream runs while a long prompt is read: each round holds its step and the rest of the batch.
  ctx.rounds = [];
  let steps = 0;
  const running = (async () => {
    for (let i = 0; i < 3; i++) await b.submit(0, [1], 600 + i), steps++;
  })();
  await b.submit(1, range(5000), 600);
  await running;
  assert.deepEqual(ctx.rounds.map((r) => [r.seq.filter((q) => q === 0).length, r.seq.length]), [
    [1, 2048],
    [1, 2048],
    [1, 907],
  ]);
  assert.equal(steps, 3);
});

Deno.test("prompts of a burst arriving a few ms apart are read in one round (a slow model waits for them)", async () => {
  // The model's speed (1 ms a token) is measured from a first prompt read alone: a long one, and one of ~200
  // tokens, under half a micro-batch (it was not counted: the rate came only from rounds of 256+ prompt
  // tokens, so a server seeing ~250-token prompts never gathered, and a burst's first prompt was read alone).
  for (const [first, size] of [[600, 300], [200, 250]]) {
    const ctx = new TimedContext(1);
    const b = new DecodeBatcher(ctx as unknown as LlamaContext, 2048, VOCAB, 512);
    await b.submit(0, range(first), 0);
    ctx.rounds = [];
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    // Four prompts 2 ms apart: the first's round would take 250-300 ms, so it waits 5-6 ms for more, and again
    // while they keep coming.
    const done: Promise<unknown>[] = [];
    for (let s = 1; s <= 4; s++) done.push(b.submit(s, range(size), 0)), await sleep(2);
    await Promise.all(done);
    assert.deepEqual(layout(ctx), [[1, 2, 3, 4].map((s) => `${s}x${size}`).join(" ")], `after ${first}`);
  }
});

Deno.test("a round reads at most a micro-batch / PROMPT_ROWS prompts, PROMPT_READERS at most", async () => {
  // Twelve 100-token prompts arriving together fit one 2048-token round, but twelve sequences in a 512-token
  // micro-batch get 42 rows each: llama.cpp computes attention per sequence in tiles, and (SmolLM2-135M shape,
  // 2 threads) 10 prompts of 204 tokens read at 697 tok/s, 8 of 256 at 925. So eight now, then the other four;
  // the same eight with micro-batches of 1024 (128 rows each), four with micro-batches of 256.
  for (const [uBatch, rounds] of [[512, [8, 4]], [1024, [8, 4]], [256, [4, 4, 4]]] as const) {
    const ctx = new RecordingContext();
    const b = new DecodeBatcher(ctx as unknown as LlamaContext, 2048, VOCAB, uBatch);
    await Promise.all(Array.from({ length: 12 }, (_, s) => b.submit(s, range(100), 0)));
    assert.deepEqual(layout(ctx).map((r) => r.split(" ").length), rounds, `micro-batches of ${uBatch}`);
  }
});

Deno.test("a prompt read alone goes in rounds of LONE_PROMPT_ROWS; with others or with running streams, in full rounds", async () => {
  const ctx = new RecordingContext();
  const b = new DecodeBatcher(ctx as unknown as LlamaContext, 2048, VOCAB, 1024);
  await b.submit(0, range(1200), 0);
  assert.deepEqual(layout(ctx), [
    `0x${LONE_PROMPT_ROWS}`,
    `0x${LONE_PROMPT_ROWS}`,
    `0x${1200 - 2 * LONE_PROMPT_ROWS}`,
  ]);
  ctx.rounds = [];
  // Two prompts fill the round as before (the second past the cohort's 2048 tokens, after the first).
  await Promise.all([b.submit(1, range(1200), 0), b.submit(2, range(1200), 0)]);
  assert.deepEqual(layout(ctx), ["1x1200 2x848", "2x352"]);
  ctx.rounds = [];
  // With a running stream's step in the round, the prompt is read whole.
  await Promise.all([b.submit(0, [1], 1200), b.submit(3, range(1200), 0)]);
  assert.deepEqual(layout(ctx)[0], "0x1 3x1200");
});

Deno.test("the hook before long work runs before each round that reads prompt tokens, and only those", async () => {
  const ctx = new RecordingContext();
  const b = batcher(ctx);
  // What the hook sees: how many rounds had run when it was called.
  const calls: number[] = [];
  b.beforePromptRound = () => calls.push(ctx.rounds.length);
  // A stream generates alone (steps only), then a prompt arrives and is read in two rounds (600 > 512).
  await b.submit(0, range(10), 0);
  for (let pos = 10; pos < 13; pos++) await b.submit(0, [1], pos);
  assert.deepEqual(calls, [0]);
  await Promise.all([b.submit(0, [1], 13), b.submit(1, range(600), 0)]);
  assert.deepEqual(layout(ctx).slice(4), ["0x1 1x511", "1x89"]);
  assert.deepEqual(calls, [0, 4, 5]);
});

Deno.test("rounds back to back wait for an I/O turn every IO_EVERY_MS (10 ms), not at every round", async () => {
  const ctx = new RecordingContext();
  // Each round holds this thread 2 ms, as a decode does.
  ctx.afterRound = () => {
    const t = performance.now();
    while (performance.now() - t < 2) { /* a decode's worth of compute */ }
  };
  const b = batcher(ctx);
  const turns: number[] = [];
  b.ioTurn = () => (turns.push(ctx.rounds.length), Promise.resolve());
  const started = performance.now();
  for (let pos = 0; performance.now() - started < 300; pos++) await b.submit(0, [1], pos);
  const rounds = ctx.rounds.length;
  // About one turn per IO_EVERY_MS of rounds, ~30 in 300 ms, never one per round.
  assert.ok(turns.length >= 10, `${turns.length} turns in ${rounds} rounds`);
  assert.ok(turns.length <= rounds / 3, `${turns.length} turns in ${rounds} rounds`);
  // A turn whose op fails still lets the round run.
  b.ioTurn = () => Promise.reject(new Error("no turn"));
  await new Promise((r) => setTimeout(r, IO_EVERY_MS + 5));
  const logits = await b.submit(0, [1], 1000);
  assert.equal(logits[1], 1000);
  // And the round after it, which waits for that failed op, runs too.
  assert.equal((await b.submit(0, [1], 1001))[1], 1001);
});

Deno.test("an I/O turn's op starts before a round's decode, and the next round waits for it", async () => {
  const ctx = new RecordingContext();
  const order: string[] = [];
  ctx.afterRound = () => order.push("decode");
  const b = batcher(ctx);
  let settle: () => void = () => {};
  b.ioTurn = () => (order.push("turn"), new Promise<void>((r) => settle = r));
  // The first round is IO_EVERY_MS past the last turn (none yet): its turn's op runs alongside its decode.
  await b.submit(0, [1], 0);
  assert.deepEqual(order, ["turn", "decode"]);
  // The next round waits for that op (the turn that lets the runner's pending messages in first).
  const next = b.submit(0, [1], 1);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(ctx.rounds.length, 1);
  settle();
  await next;
  assert.equal(ctx.rounds.length, 2);
  // That round, IO_EVERY_MS after the first turn, started the next one before its decode.
  assert.deepEqual(order, ["turn", "decode", "turn", "decode"]);
});
