// Owns continuous batching for one llama.cpp context: every sequence that wants a token decoded (a decode step)
// or a prompt read (a prefill) queues its work here, and each round runs ONE llama_decode holding every waiting
// step and up to a batch of prompt tokens (llama.cpp computes it in micro-batches). Prompts are read as
// cohorts: the prompts of a burst (in arrival order, up to PROMPT_COHORT tokens and uBatch / PROMPT_ROWS
// prompts, PROMPT_READERS at most) share every round's prompt budget equally, so they finish together as they
// would in one big batch (llama-server's n_batch), while running streams still get a token every round (a
// smaller batch_size keeps them flowing more evenly: on 2 CPU cores a 2048-token round holds them ~2.5 s).
// Rows go in by sequence id: with one KV stream per sequence, llama.cpp splits a batch into micro-batches of
// consecutive sequence ids, so sorted rows make as few of them as possible.
// A round starts as a macrotask, after the sequences resolved by the previous round have sampled and queued
// their next token (microtasks), and never inside submit: a round started there (when every open sequence had
// queued its step) chained rounds through microtasks, so a new request's message waited until the running
// streams ended (16 requests arriving together: the first generated all its tokens alone, 0.2-0.6 s, before
// the second's prompt was read).
// A lone stream may instead hold the context for a run ahead in C (hold): any submit stops it, and rounds
// resume once it has ended.
import { setImmediate } from "node:timers";
import type { LlamaContext } from "./ffi.ts";
import { ioTurn } from "./io_turn.ts";

interface Work {
  seq: number;
  tokens: readonly number[];
  /** Position of tokens[0]. */
  pos: number;
  /** Tokens of `tokens` already decoded in earlier rounds. */
  done: number;
  resolve(logits: Float32Array): void;
  reject(e: unknown): void;
}

/** A run ahead as the batcher sees it: how to stop it, and its end (with the llama_decode calls it made). */
export interface AheadRun {
  stop(): void;
  readonly done: Promise<number>;
}

/** llama_decode's "no room in the KV cache" (a sequence's stream holds its context length: not expected). */
export const NO_KV_ROOM = 1;

/**
 * Prompt tokens read as one cohort: waiting prompts join the cohort in arrival order while their tokens fit
 * (the first always does). llama-server reads a burst in batches of 2048 (its n_batch) and every prompt of a
 * batch gets its first token at the same time; a cohort does the same in rounds of at most a batch each.
 */
export const PROMPT_COHORT = 2048;

/**
 * Rows of each prompt a micro-batch should hold at least, so a round reads at most uBatch / PROMPT_ROWS prompts
 * (8 of 512). llama.cpp splits a round with a KV stream per sequence into micro-batches holding an equal number
 * of rows of each of its sequences, and computes attention per sequence in tiles: on the SmolLM2-135M shape (2
 * threads) 2048 prompt tokens read at 925 tok/s as 8 prompts of 256 (64 rows each per micro-batch), 794 as 16 of
 * 128, 697 as 10 of 204 (51 rows). Eight prompts first also give those eight their first tokens in ~1.8 s
 * instead of all ten in ~3 s; the rest are read next, with the first eight's steps.
 */
export const PROMPT_ROWS = 64;
/**
 * Prompts a round reads at most, whatever the micro-batch: with micro-batches of 1024 (mod.ts BURST_BATCH) the
 * same eight get 128 rows each, which is what was measured to read a burst faster.
 */
export const PROMPT_READERS = 8;
/**
 * Prompt tokens a round reads at most when it reads one prompt and nothing else: llama.cpp computes one
 * sequence's rows faster in micro-batches of 512 than of 1024 (llama-bench pp1024/pp2048 2-5% faster: less of
 * each micro-batch's attention is masked), and a round of its own costs next to nothing more.
 */
export const LONE_PROMPT_ROWS = 512;
/**
 * Prompt tokens a round must read to measure the model's speed by (a round's fixed costs dominate tiny ones).
 * Lone ~250-token prompts must count: with half a micro-batch (256) as the bar, a server whose requests were
 * all of that size never measured it, so never gathered a burst (16 streams: first tokens p50 1.2x
 * llama-server's: a burst's first prompt was read alone, the rest only after it).
 */
export const RATE_TOKENS = 64;
/** A prompt round with no stream running waits this share of its expected time for more prompts, ... */
export const GATHER_SHARE = 0.02;
/** ... at most this long (ms). */
export const GATHER_MS = 50;

/**
 * Rounds that run back to back go this long (ms) at most without an I/O turn (io_turn.ts, ~0.04 ms): a request
 * arriving while streams ran got its first token 45-120 ms later than on an idle model without them.
 */
export const IO_EVERY_MS = 10;

/** A decode step: one token left (a running stream's next, or a prompt all but one token of which was cached). */
const isStep = (w: Work) => w.tokens.length - w.done === 1;

export class DecodeBatcher {
  readonly #queue: Work[] = [];
  #scheduled = false;
  #closed = false;
  /** A sequence's run ahead holding the context (see hold). */
  #ahead: AheadRun | null = null;
  /** The prompts being read together (see PROMPT_COHORT). */
  #cohort: Work[] = [];
  #tokens: Int32Array;
  #pos: Int32Array;
  #seq: Int32Array;
  #out: Int32Array;
  /** One logits row per sequence id, each handed out as a view (no copy, no allocation per token). */
  #logits: Float32Array;

  /** Prompt tokens a round decodes per second (a moving average over rounds of at least RATE_TOKENS). */
  #promptRate = 0;
  #decodes = 0;
  /** When a round last started an I/O turn's op. */
  #ioAt = 0;
  /** The op of the I/O turn the next round waits for, started before this round's decode (settles either way). */
  #turn: Promise<void> | undefined;
  /** Runs before a round that reads prompt tokens (LoadContext.beforeLongWork). */
  beforePromptRound: (() => void) | undefined;
  /** The op a round starts before its decode every IO_EVERY_MS, which the next waits for (io_turn.ts; tests count it). */
  ioTurn: () => Promise<unknown> = ioTurn;

  /**
   * `nBatch`: tokens a round takes at most; `uBatch`: the micro-batch llama.cpp computes them in (it bounds the
   * prompts read together, see PROMPT_ROWS).
   */
  constructor(
    private readonly ctx: LlamaContext,
    private readonly nBatch: number,
    private readonly nVocab: number,
    private readonly uBatch = nBatch,
  ) {
    this.#tokens = new Int32Array(nBatch);
    this.#pos = new Int32Array(nBatch);
    this.#seq = new Int32Array(nBatch);
    this.#out = new Int32Array(nBatch);
    this.#logits = new Float32Array(0);
  }

  /**
   * Decodes `tokens` at positions pos.. of `seq`; resolves with the logits after the last one: a view of that
   * sequence's own row, which stays as it is (the caller may work on it in place) until the sequence's next
   * submit. A sequence has one submit in flight at a time.
   */
  submit(seq: number, tokens: readonly number[], pos: number): Promise<Float32Array> {
    if (tokens.length === 0) return Promise.reject(new Error("nothing to decode"));
    return new Promise((resolve, reject) => {
      this.#queue.push({ seq, tokens, pos, done: 0, resolve, reject });
      this.#ahead?.stop();
      this.#schedule();
    });
  }

  /**
   * llama_decode calls so far. llama.cpp applies a queued copy of one KV stream to another at the start of
   * the next llama_decode: until this count moves, a copy's source and destination hold their old data.
   */
  get decodes(): number {
    return this.#decodes;
  }

  /**
   * Hands the context to one sequence's run ahead (LlamaContext.runAhead) when no other work is queued or
   * under way: `start` begins it and returns how to stop it and when it ends (with its llama_decode calls).
   * Work submitted meanwhile stops it, and the next round waits until it has ended. Null when busy.
   */
  hold(start: () => AheadRun): AheadRun | null {
    if (this.#queue.length || this.#scheduled || this.#ahead || this.#closed) return null;
    const run = start();
    this.#ahead = run;
    const over = (decodes: number) => {
      this.#decodes += decodes;
      this.#ahead = null;
      // No gather: the stream's own step joins in the microtasks that follow (it takes its last tokens).
      if (this.#queue.length) this.#schedule(true);
    };
    run.done.then(over, () => over(0));
    return run;
  }

  /** Whether a run ahead holds the context (nothing else may touch it until it ends). */
  get held(): boolean {
    return this.#ahead !== null;
  }

  /** Stops a run ahead, if one holds the context; resolves once it has ended. */
  release(): Promise<void> {
    const run = this.#ahead;
    if (!run) return Promise.resolve();
    run.stop();
    return run.done.then(() => {}, () => {});
  }

  /** Fails every queued piece of work (the model is going away). */
  close(reason: unknown): void {
    for (const w of this.#queue.splice(0)) w.reject(reason);
    this.#closed = true;
  }

  #round(): void {
    // A run ahead still ending: the round comes when it has (hold's `over`).
    if (this.#queue.length === 0 || this.#ahead) return;
    const steps = this.#queue.filter(isStep);
    const prompts = this.#queue.filter((w) => !isStep(w));
    // The cohort: prompts that join in arrival order while its prompts' tokens fit PROMPT_COHORT (the first
    // always does), read together until each of them is; requests of a burst arrive one by one, so they join
    // a cohort already being read.
    this.#cohort = this.#cohort.filter((w) => this.#queue.includes(w));
    let held = this.#cohort.reduce((n, w) => n + w.tokens.length, 0);
    const most = Math.max(1, Math.min(PROMPT_READERS, Math.floor(this.uBatch / PROMPT_ROWS)));
    for (const w of prompts) {
      if (this.#cohort.includes(w)) continue;
      if (this.#cohort.length >= most) break;
      if (this.#cohort.length && held + w.tokens.length > PROMPT_COHORT) break;
      this.#cohort.push(w);
      held += w.tokens.length;
    }
    // Every step takes part (a running stream never waits for a prompt), then the cohort shares the budget
    // left equally (what a short prompt leaves goes to the longer ones), then later prompts in arrival order.
    const take = new Map<Work, number>();
    const stepRows = Math.min(steps.length, this.nBatch);
    for (const w of steps.slice(0, stepRows)) take.set(w, 1);
    // No smaller budget while streams run: a 150 ms one (the prompts a model reads in that time, at least a
    // micro-batch) read the second half of a 16-prompt burst in four rounds of 512 on 2 CPU cores, which cost
    // more than the one 2048-token round it replaced (per-stream decode -4..-17%, last first token +15..40%):
    // the prompts must be read within the running streams' spans either way, and fewer, larger rounds read
    // them faster. llama-server does the same.
    let budget = Math.max(0, this.nBatch - stepRows);
    const left = (w: Work) => w.tokens.length - w.done - (take.get(w) ?? 0);
    // Equal shares, never one token more for some: llama.cpp splits a batch into micro-batches of sequences
    // with the same token count (one KV stream each), so 47 tokens for six prompts and 46 for five cost one
    // more pass over the weights than 46 each. What a short prompt leaves goes to the others the same way.
    let open = this.#cohort.filter((w) => left(w) > 0);
    while (budget >= open.length && open.length) {
      const share = Math.min(Math.floor(budget / open.length), ...open.map(left));
      for (const w of open) take.set(w, (take.get(w) ?? 0) + share);
      budget -= share * open.length;
      open = open.filter((w) => left(w) > 0);
    }
    let reading = this.#cohort.filter((w) => take.has(w)).length;
    for (const w of prompts) {
      if (budget === 0 || reading >= most) break;
      if (take.has(w)) continue;
      reading++;
      const n = Math.min(left(w), budget);
      take.set(w, n);
      budget -= n;
    }
    if (stepRows === 0 && take.size === 1) {
      const [[lone, n]] = take;
      if (n > LONE_PROMPT_ROWS) take.set(lone, LONE_PROMPT_ROWS);
    }
    const took = [...take.keys()].sort((a, b) => a.seq - b.seq);
    let n = 0;
    const finishing: Work[] = [];
    let rows = this.#logits.length / this.nVocab;
    for (const w of took) {
      const count = take.get(w)!;
      for (let i = 0; i < count; i++, n++) {
        this.#tokens[n] = w.tokens[w.done + i];
        this.#pos[n] = w.pos + w.done + i;
        this.#seq[n] = w.seq;
        this.#out[n] = 0;
      }
      w.done += count;
      if (w.done === w.tokens.length) {
        this.#out[n - 1] = w.seq + 1;
        finishing.push(w);
        rows = Math.max(rows, w.seq + 1);
      }
    }
    if (this.#logits.length < rows * this.nVocab) {
      // A view handed out earlier keeps the old buffer alive, unchanged: its sequence can still read it.
      this.#logits = new Float32Array(rows * this.nVocab);
    }
    const prompt = n - stepRows;
    if (prompt > 0) this.beforePromptRound?.();
    const started = performance.now();
    // Every IO_EVERY_MS the I/O turn's op starts here, so it completes off this thread during the decode and the
    // next round waits for nothing (see #schedule).
    if (started - this.#ioAt >= IO_EVERY_MS) {
      this.#ioAt = started;
      this.#turn = this.ioTurn().then(() => {}, () => {});
    }
    const rc = this.#decode(n);
    if (rc === 0 && prompt >= RATE_TOKENS) {
      const rate = n / Math.max(1e-3, (performance.now() - started) / 1000);
      this.#promptRate = this.#promptRate ? 0.7 * this.#promptRate + 0.3 * rate : rate;
    }
    if (rc !== 0) {
      const err = new Error(
        rc === NO_KV_ROOM
          ? "the model's KV cache is full: too many tokens in flight for its context size"
          : `llama_decode failed (${rc})`,
      );
      // Everything that took part in this round is lost; the rest stays queued.
      for (const w of took) this.#queue.splice(this.#queue.indexOf(w), 1), w.reject(err);
    } else {
      for (const work of finishing) {
        this.#queue.splice(this.#queue.indexOf(work), 1);
        work.resolve(this.#logits.subarray(work.seq * this.nVocab, (work.seq + 1) * this.nVocab));
      }
    }
    // Work still queued (prompts being read): the next round one hop later, so that what the sequences
    // resolved now schedule as they continue (the worker's message carrying their tokens) goes first. Without
    // the extra hop a cohort's first tokens reached the HTTP thread only after the next round (~0.6 s here).
    if (this.#queue.length) this.#schedule(true);
  }

  /**
   * The next round as a macrotask through setImmediate (a few µs): a MessageChannel hop is as cheap but Deno
   * drains a port's messages without returning to the event loop, so a port pinging itself (a round per
   * token) kept the worker's other messages, new requests among them, waiting until the streams ended.
   */
  #schedule(afterNext = false): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      if (!this.#closed) this.#round();
    };
    const gather = afterNext ? 0 : this.#gatherMs();
    if (gather <= 0) {
      const hop = afterNext ? (f: () => void) => setImmediate(() => setImmediate(f)) : setImmediate;
      // Rounds back to back never leave Deno's runtime idle: every IO_EVERY_MS one comes after an I/O turn,
      // so a message that came meanwhile (a new request, a client gone) is read before it, not a few dozen
      // rounds later. The turn's op was started before the last decode (#round), so it is done by now: one
      // stream's hop to a turn took 0.07-0.08 ms in a runner, against 0.15-0.18 when the op started here
      // (a plain hop: 0.05; a turn every other Q4_0 token, ~0.8% of its time saved).
      const turn = this.#turn;
      this.#turn = undefined;
      if (!turn) return void hop(run);
      // The round runs whatever the turn's op gives (settled either way: a failed op must not stall a stream).
      return void hop(() => void turn.then(run));
    }
    // Waits again while the burst is still arriving (up to GATHER_MS in all): a lone request waits once.
    let waited = 0;
    let queued = this.#queue.length;
    const wait = () => {
      waited += gather;
      setTimeout(() => {
        if (this.#queue.length > queued && waited + gather <= GATHER_MS) {
          queued = this.#queue.length;
          wait();
        } else run();
      }, gather);
    };
    wait();
  }

  /**
   * How long a round that only reads prompts (no stream running) waits for the rest of a burst: requests
   * arriving together reach this thread a few ms apart (each parsed and sent on by the server), and a prompt
   * that misses the first round waits all of it, then is read while the first streams run (on 2 CPU cores a
   * 4-request burst's round is ~1 s: the late ones' first tokens came a round later and the early streams
   * decoded ~20% slower). GATHER_SHARE of the round's expected time (nothing to speak of on a GPU, ~2% of a
   * lone request's first token on a CPU), again while more prompts keep arriving, up to GATHER_MS in all.
   */
  #gatherMs(): number {
    // A run ahead being stopped: its stream's step is about to join.
    if (!this.#promptRate || this.#ahead || this.#queue.some(isStep)) return 0;
    const tokens = Math.min(this.nBatch, this.#queue.reduce((n, w) => n + w.tokens.length - w.done, 0));
    return Math.min(GATHER_MS, (tokens / this.#promptRate) * 1000 * GATHER_SHARE);
  }

  #decode(n: number): number {
    this.#decodes++;
    return this.ctx.decode(
      this.#tokens.subarray(0, n),
      this.#pos.subarray(0, n),
      this.#seq.subarray(0, n),
      this.#out.subarray(0, n),
      this.#logits,
    );
  }
}
