// Owns merging concurrent list calls to a model's compute side into one message: the first call goes at once,
// calls made while one is in flight wait and go together when it returns, each caller getting its own slice
// of the results. An embeddings burst (32 requests arriving together) tokenized each request's input in a
// message of its own, each waking both processes on the cores the model computes on.
/** Items one merged call carries at most (a caller's own list always goes whole). */
export const COALESCE_ITEMS = 4096;

interface Waiter<I, O> {
  items: I[];
  resolve(out: O[]): void;
  reject(err: unknown): void;
  signal?: AbortSignal;
}

export class ListCoalescer<I, O> {
  #waiting: Waiter<I, O>[] = [];
  #inFlight = false;

  /** `run`: one call over the items of several callers, one result per item, in order. */
  constructor(private readonly run: (items: I[]) => Promise<O[]>, private readonly most = COALESCE_ITEMS) {}

  /**
   * The results for `items`. An aborted signal rejects this caller at once (its items, if already sent, are
   * worked out with the others' and dropped).
   */
  call(items: I[], signal?: AbortSignal): Promise<O[]> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<O[]>((resolve, reject) => {
      const onAbort = () => reject(signal!.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push({
        items,
        signal,
        resolve: (out) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(out);
        },
        reject: (err) => {
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
      });
      void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    if (this.#inFlight) return;
    this.#inFlight = true;
    try {
      while (this.#waiting.length > 0) {
        const group: Waiter<I, O>[] = [];
        let count = 0;
        while (this.#waiting.length > 0) {
          const next = this.#waiting[0];
          if (group.length > 0 && count + next.items.length > this.most) break;
          this.#waiting.shift();
          if (next.signal?.aborted) continue;
          group.push(next);
          count += next.items.length;
        }
        if (group.length === 0) continue;
        try {
          const out = await this.run(group.flatMap((w) => w.items));
          let at = 0;
          for (const w of group) {
            w.resolve(out.slice(at, at + w.items.length));
            at += w.items.length;
          }
        } catch (err) {
          for (const w of group) w.reject(err);
        }
      }
    } finally {
      this.#inFlight = false;
    }
  }
}
