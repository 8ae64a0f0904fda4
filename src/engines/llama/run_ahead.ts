// Owns the model thread's side of a lone stream's run ahead (lshim_run_ahead, LlamaContext.runAhead): the C
// loop decodes and draws on a thread of its own and publishes each token in shared buffers; this side takes
// them in order as the pipeline asks (ChatBackend.runAhead's RunAhead), setting the choice's Rng to the state
// after each draw taken, and ends the run. It looks for new tokens on a timer: the C loop cannot call into
// JavaScript without waiting for this thread (a thread-safe callback blocks its caller until the callback
// has run), which would put this thread's work back between two decodes. The run's end wakes it at once.
import type { RunAhead } from "../types.ts";

/**
 * What a run reads and publishes into (see lshim_run_ahead): the Rng state it starts from, ctl [stop, drawn,
 * status, 0], each draw's token and the state after it. Held by the run until the C call has returned: a
 * buffer handed to a non-blocking call must outlive it (a temporary could be collected meanwhile).
 */
export interface AheadBuffers {
  rng: Uint32Array;
  ctl: Int32Array;
  tokens: Int32Array;
  states: Uint32Array;
}

export function aheadBuffers(cap: number, rng: Uint32Array): AheadBuffers {
  return {
    rng: rng.slice(),
    ctl: new Int32Array(4),
    tokens: new Int32Array(cap),
    states: new Uint32Array(cap * 4),
  };
}

/**
 * The least wait between two looks (ms): a token takes longer than this on any model worth running this
 * way, and Deno's timers do not fire sooner.
 */
const POLL_MS = 1;

export class TokenRun implements RunAhead {
  #taken = 0;
  #over = false;
  #waiter: ((t: number | null) => void) | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the last token was seen, and the moving average of the time between two (ms). */
  #seenAt = performance.now();
  #pace = 0;
  readonly #ended: Promise<void>;

  /**
   * `done`: the C call (resolves with its llama_decode calls); `settle(decodes)` records the cells it wrote
   * (before anything else hears of its end); `cut(taken)` drops what the pipeline did not take.
   */
  constructor(
    private readonly buf: AheadBuffers,
    private readonly rng: Uint32Array,
    done: Promise<number>,
    settle: (decodes: number) => void,
    private readonly cut: (taken: number) => void,
  ) {
    this.#ended = done.then(settle, () => settle(0)).then(() => {
      this.#over = true;
      this.#wake();
    });
  }

  next(): Promise<number | null> {
    const t = this.#take();
    if (t !== undefined) return Promise.resolve(t);
    if (this.#over) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.#waiter = resolve;
      this.#arm();
    });
  }

  async end(taken: number): Promise<void> {
    this.stop();
    await this.#ended;
    if (this.#timer !== undefined) clearTimeout(this.#timer), this.#timer = undefined;
    this.cut(taken);
  }

  /** Asks the C loop to stop before its next decode. */
  stop(): void {
    Atomics.store(this.buf.ctl, 0, 1);
  }

  #take(): number | undefined {
    const i = this.#taken;
    if (i >= Atomics.load(this.buf.ctl, 1)) return undefined;
    this.#taken++;
    this.rng.set(this.buf.states.subarray(4 * i, 4 * i + 4));
    return this.buf.tokens[i];
  }

  /**
   * The next look: when the next token should be there by the pace so far, then every POLL_MS (one or two
   * wake-ups a token rather than one a millisecond).
   */
  #arm(): void {
    if (this.#timer !== undefined) return;
    const now = performance.now();
    const due = this.#pace ? this.#seenAt + this.#pace * 0.9 - now : 0;
    this.#timer = setTimeout(this.#look, Math.max(POLL_MS, due));
  }

  readonly #look = () => {
    this.#timer = undefined;
    if (!this.#waiter) return;
    const before = this.#taken;
    this.#wake();
    if (this.#taken === before && !this.#over) this.#arm();
  };

  /** Hands the waiting pipeline its token (or the end), noting the pace. */
  #wake(): void {
    const waiter = this.#waiter;
    if (!waiter) return;
    const drawn = Atomics.load(this.buf.ctl, 1);
    const fresh = drawn - this.#taken;
    const t = this.#take();
    if (t === undefined && !this.#over) return;
    this.#waiter = null;
    if (this.#timer !== undefined) clearTimeout(this.#timer), this.#timer = undefined;
    if (t !== undefined && fresh > 0) {
      const now = performance.now();
      // Tokens found together came over the time since the last look that found any.
      const each = (now - this.#seenAt) / fresh;
      this.#pace = this.#pace ? 0.8 * this.#pace + 0.2 * each : each;
      this.#seenAt = now;
    }
    waiter(t ?? null);
  }
}
