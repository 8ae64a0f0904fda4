// Owns continuous batching for one llama.cpp context: every sequence that wants a token decoded (a decode step)
// or a prompt read (a prefill) queues its work here, and each round runs ONE llama_decode: every waiting step
// together, or prompts in arrival order (prompts first: a round of steps after at most `promptRounds` prompt
// rounds, the model's --parallel). Streams therefore generate together, and a new request's prompt is read between their tokens
// instead of after their generations. A round starts as a macrotask, after the sequences resolved by the
// previous round have sampled and queued their next token (microtasks).
import type { LlamaContext } from "./ffi.ts";

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

/** llama_decode's "no room in the KV cache" (the context holds only running sequences: too many tokens in flight). */
export const NO_KV_ROOM = 1;

/** Prompt tokens a round reads before it stops taking in further prompts (enough to keep the cores busy). */
export const PROMPT_CHUNK = 64;

export class DecodeBatcher {
  readonly #queue: Work[] = [];
  readonly #wake = new MessageChannel();
  #scheduled = false;
  /** Prompt rounds since the last round of steps (steps may go first at the start). */
  #promptRounds = Infinity;
  #tokens: Int32Array;
  #pos: Int32Array;
  #seq: Int32Array;
  #out: Int32Array;
  /** One logits row per sequence id, each handed out as a view (no copy, no allocation per token). */
  #logits: Float32Array;

  constructor(
    private readonly ctx: LlamaContext,
    private readonly nBatch: number,
    private readonly nVocab: number,
    /** Sequences open now: once that many have queued work, nobody else is coming and the round starts. */
    private readonly open: () => number = () => Infinity,
    /**
     * Prompt rounds that may run before a waiting round of steps goes (prompts waiting all the while): the
     * model's --parallel, so a burst of as many requests as it serves together is read before the running
     * streams' next tokens. A round of steps costs several ms per running stream (each step row attends over
     * the whole unified KV cache); with one after every prompt round, 8 requests arriving together saw the
     * last first token 3-6% past 8 idle prefills + 10% (SmolLM2-135M shape), with 4 about at it (0.99-1.03x),
     * with 8 within it (0.95-0.97x, p50 4.6-4.7x idle). Running streams pause meanwhile, for at most this
     * many prefills.
     */
    private readonly promptRounds = 1,
  ) {
    this.#tokens = new Int32Array(nBatch);
    this.#pos = new Int32Array(nBatch);
    this.#seq = new Int32Array(nBatch);
    this.#out = new Int32Array(nBatch);
    this.#logits = new Float32Array(0);
    this.#wake.port1.onmessage = () => {
      this.#scheduled = false;
      this.#round();
    };
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
      // Every open sequence is waiting: start now instead of after a macrotask hop (one stream's every token).
      if (this.#queue.length >= this.open()) return this.#round();
      if (!this.#scheduled) {
        this.#scheduled = true;
        this.#wake.port2.postMessage(null);
      }
    });
  }

  /** Fails every queued piece of work (the model is going away). */
  close(reason: unknown): void {
    for (const w of this.#queue.splice(0)) w.reject(reason);
    this.#wake.port1.close();
    this.#wake.port2.close();
  }

  #round(): void {
    if (this.#queue.length === 0) return;
    // Steps (one token left) and prompts take turns while both wait: a round of every step after at most
    // `promptRounds` rounds of prompts. Prompt rounds don't carry step rows, which cost several
    // times their share inside a prompt-sized batch (attention tiles of a step row's sequence can't be
    // skipped; measured on the bench model: +8 ms per step in a 193-token prompt round, against ~3.5 ms per
    // step in a round of steps alone).
    const isStep = (w: Work) => w.tokens.length - w.done === 1;
    const steps = this.#queue.filter(isStep);
    const stepTurn = steps.length > 0 &&
      (steps.length === this.#queue.length || this.#promptRounds >= this.promptRounds);
    this.#promptRounds = stepTurn ? 0 : this.#promptRounds + 1;
    const order = stepTurn ? steps : this.#queue.filter((w) => !isStep(w));
    let n = 0;
    let promptTokens = 0;
    const took: Work[] = [];
    const finishing: Work[] = [];
    let rows = this.#logits.length / this.nVocab;
    for (const w of order) {
      if (n >= this.nBatch) break;
      const left = w.tokens.length - w.done;
      // Prompts are read one after another, not all at once: with k prompts in one round every one of them
      // waits for all k, while in turn the i-th waits for i. A round still takes further prompts while it has
      // fewer than PROMPT_CHUNK prompt tokens, so many short prompts share one decode.
      if (left > 1 && promptTokens >= PROMPT_CHUNK) break;
      const take = Math.min(left, this.nBatch - n);
      if (left > 1) promptTokens += take;
      took.push(w);
      for (let i = 0; i < take; i++, n++) {
        this.#tokens[n] = w.tokens[w.done + i];
        this.#pos[n] = w.pos + w.done + i;
        this.#seq[n] = w.seq;
        this.#out[n] = 0;
      }
      w.done += take;
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
    const rc = this.#decode(n);
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
    if (this.#queue.length && !this.#scheduled) {
      this.#scheduled = true;
      this.#wake.port2.postMessage(null);
    }
  }

  #decode(n: number): number {
    return this.ctx.decode(
      this.#tokens.subarray(0, n),
      this.#pos.subarray(0, n),
      this.#seq.subarray(0, n),
      this.#out.subarray(0, n),
      this.#logits,
    );
  }
}
