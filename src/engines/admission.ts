// Owns admission, the one place a request gets its turn on a model: per model, a bounded FIFO queue (as many
// run at once as the engine computes together; past --queue-size QueueFull, a 429 with Retry-After) and, for
// engines that compute batches (embeddings), a dynamic batcher renewed with each load of the engine, bounded
// the same way. The registry owns one (a model with work admitted is never unloaded); endpoint modules ask it
// for their model's queue or batcher; /metrics reads its depths and batch counters.
import type { BatcherStats, DynamicBatcher } from "./batcher.ts";
import { BoundedQueue } from "./queue.ts";

/** What /metrics shows of a model's admission. */
export interface AdmissionDepth {
  model: string;
  active: number;
  waiting: number;
}

export class Admission {
  readonly #queues = new Map<string, BoundedQueue>();
  // deno-lint-ignore no-explicit-any
  readonly #batchers = new Map<string, { owner: object; batcher: DynamicBatcher<any, any> }>();

  constructor(readonly queueSize: number) {}

  /** A model's queue; `concurrency` is fixed by the first caller (what its engine runs at once). */
  queue(model: string, concurrency = 1): BoundedQueue {
    let q = this.#queues.get(model);
    if (!q) this.#queues.set(model, q = new BoundedQueue(model, concurrency, this.queueSize));
    return q;
  }

  /**
   * A model's batcher for the engine `owner` (made by `make` the first time, and again once the model was
   * loaded anew: a batcher runs one engine's calls).
   */
  batcher<I, O>(
    model: string,
    owner: object,
    make: (maxWaiting: number) => DynamicBatcher<I, O>,
  ): DynamicBatcher<I, O> {
    const known = this.#batchers.get(model);
    if (known && known.owner === owner) return known.batcher;
    const batcher = make(this.queueSize);
    this.#batchers.set(model, { owner, batcher });
    return batcher;
  }

  /** Whether a model has work admitted (running or waiting): it must not be unloaded. */
  busy(model: string): boolean {
    const q = this.#queues.get(model);
    if (q && (q.active > 0 || q.waiting > 0)) return true;
    const s = this.#batchers.get(model)?.batcher.stats();
    return !!s && (s.running || s.waiting > 0);
  }

  /** Requests per model running and waiting, queues and batchers together. */
  depths(): AdmissionDepth[] {
    const out = new Map<string, AdmissionDepth>();
    const add = (model: string, active: number, waiting: number) => {
      const d = out.get(model) ?? { model, active: 0, waiting: 0 };
      d.active += active;
      d.waiting += waiting;
      out.set(model, d);
    };
    for (const [model, q] of this.#queues) add(model, q.active, q.waiting);
    for (const [model, { batcher }] of this.#batchers) {
      const s = batcher.stats();
      add(model, s.running ? 1 : 0, s.waiting);
    }
    return [...out.values()];
  }

  /** Batching counters per model. */
  batches(): { model: string; stats: BatcherStats }[] {
    return [...this.#batchers].map(([model, { batcher }]) => ({ model, stats: batcher.stats() }));
  }
}
