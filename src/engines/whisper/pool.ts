// Owns the bounded pool of per-transcription resources (whisper states): created lazily up to `max`, handed out
// first come first served, waited for (abortably) when all are busy, and drained on dispose only after every
// borrower has returned its item, because freeing a state that whisper_full still uses would crash the process.
export class Pool<T> {
  #idle: T[] = [];
  #all = 0;
  #busy = 0;
  #creating = 0;
  #waiters: { resolve: (t: T) => void; reject: (e: unknown) => void }[] = [];
  #closed = false;
  #drained?: () => void;

  constructor(
    readonly max: number,
    readonly create: () => Promise<T>,
    readonly destroy: (t: T) => void,
  ) {
    if (!(max >= 1)) throw new RangeError("pool size must be at least 1");
  }

  get size(): number {
    return this.#all;
  }

  get busy(): number {
    return this.#busy;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** An item to use exclusively until `release`. Rejects with the signal's reason when aborted while waiting. */
  async acquire(signal?: AbortSignal): Promise<T> {
    if (this.#closed) throw new Error("pool is closed");
    signal?.throwIfAborted();
    const idle = this.#idle.pop();
    if (idle !== undefined) {
      this.#busy++;
      return idle;
    }
    if (this.#all + this.#creating < this.max) {
      this.#creating++;
      try {
        const t = await this.create();
        this.#all++;
        this.#busy++;
        return t;
      } finally {
        this.#creating--;
      }
    }
    return await new Promise<T>((resolve, reject) => {
      const waiter = {
        resolve: (t: T) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(t);
        },
        reject,
      };
      const onAbort = () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  release(t: T): void {
    const next = this.#waiters.shift();
    if (next && !this.#closed) return next.resolve(t); // stays busy, changes hands
    this.#busy--;
    if (this.#closed) {
      this.destroy(t);
      this.#all--;
      if (this.#busy === 0) this.#drained?.();
    } else this.#idle.push(t);
  }

  /** Refuses new borrowers, waits for the current ones, then destroys everything. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.reject(new Error("pool is closed"));
    for (const t of this.#idle.splice(0)) {
      this.destroy(t);
      this.#all--;
    }
    if (this.#busy > 0) await new Promise<void>((r) => this.#drained = r);
  }
}
