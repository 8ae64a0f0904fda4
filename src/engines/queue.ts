// Owns admission control: a bounded FIFO semaphore per model. `running` slots execute at once; up to
// `maxWaiting` more wait in arrival order; beyond that the caller gets 429 with Retry-After. A waiter whose
// client goes away leaves the queue without taking a slot.
import { QueueFull } from "../errors.ts";

export interface Permit {
  release(): void;
}

export class BoundedQueue {
  #active = 0;
  #waiters: { resolve: (p: Permit) => void; reject: (e: unknown) => void; signal?: AbortSignal }[] = [];
  /** Rough seconds one job takes, for Retry-After; updated by callers via `observe`. */
  #avgSeconds = 1;

  constructor(
    readonly name: string,
    readonly concurrency: number,
    readonly maxWaiting: number,
  ) {}

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Records how long one job took so Retry-After tracks reality. */
  observe(seconds: number): void {
    this.#avgSeconds = this.#avgSeconds * 0.8 + seconds * 0.2;
  }

  retryAfterSeconds(): number {
    const ahead = this.#waiters.length + this.#active;
    return Math.max(1, Math.ceil((ahead * this.#avgSeconds) / this.concurrency));
  }

  /** Waits for a slot; throws 429 when the queue is full, or the signal's reason when aborted. */
  acquire(signal?: AbortSignal): Promise<Permit> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#active < this.concurrency) {
      this.#active++;
      return Promise.resolve(this.#permit());
    }
    if (this.#waiters.length >= this.maxWaiting) {
      return Promise.reject(new QueueFull(this.retryAfterSeconds(), `Model \`${this.name}\``));
    }
    return new Promise<Permit>((resolve, reject) => {
      const onAbort = () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) {
          this.#waiters.splice(i, 1);
          reject(signal!.reason);
        }
      };
      const waiter = {
        resolve: (p: Permit) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(p);
        },
        reject,
        signal,
      };
      this.#waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Runs `fn` holding a slot. */
  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const permit = await this.acquire(signal);
    const started = performance.now();
    try {
      return await fn();
    } finally {
      this.observe((performance.now() - started) / 1000);
      permit.release();
    }
  }

  #permit(): Permit {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const next = this.#waiters.shift();
        if (next) next.resolve(this.#permit());
        else this.#active--;
      },
    };
  }
}
