// Owns dynamic batching: requests (each a list of items) submitted concurrently are gathered for a short window
// or until a cost budget is reached, sorted by cost so similar lengths share a call (less padding), run through
// one model call at a time, and their results split back in order. Bounded: beyond `maxWaiting` waiting
// requests the caller gets 429 with Retry-After. A request whose caller goes away before its items run is
// dropped. Generic over item and result types; knows nothing about models.
import { QueueFull } from "../errors.ts";

export interface BatchInfo {
  /** Items in this model call. */
  inputs: number;
  /** Distinct requests they came from. */
  requests: number;
  /** Sum of the items' costs (e.g. real tokens). */
  cost: number;
  /** Items × largest cost: what the call pays for with padding. */
  paddedCost: number;
  ms: number;
}

export interface BatcherOptions<I, O> {
  /** Used in the 429 message. */
  name: string;
  /** How long the first waiting request waits for company while the batcher is idle. */
  windowMs: number;
  /** Largest padded cost (items × largest item cost) of one call; one oversized item still runs alone. */
  budget: number;
  /**
   * Waiting items that are already worth a call of their own: they run without waiting out the window, since
   * more company could save at most one call's fixed cost, already shared by this many items. Default: never.
   */
  eagerItems?: number;
  /** Requests that may wait (not yet handed to a call); more get 429. */
  maxWaiting: number;
  cost(item: I): number;
  /** One model call: one result per item, in order. */
  run(items: I[]): Promise<O[]>;
  /** Called after every call (a debug log line, for instance). */
  onBatch?(info: BatchInfo): void;
}

/** Upper bounds of the inputs-per-batch histogram. */
export const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, Infinity];

export interface BatcherStats {
  /** Model calls run. */
  batches: number;
  /** Items run, over all calls (inputs / batches = mean batch size). */
  inputs: number;
  /** Requests completed. */
  requests: number;
  /** Largest call so far, in items. */
  maxInputs: number;
  /** Calls per batch-size bucket (`buckets[i]` is the bucket's upper bound; counts are not cumulative). */
  inputsPerBatch: { buckets: number[]; counts: number[] };
  /** Requests dropped because their caller went away before they ran. */
  dropped: number;
  /** Requests refused with 429. */
  rejected: number;
  /** Requests failed by their model call. */
  failed: number;
  /** Requests waiting now. */
  waiting: number;
  /** Whether a call is running now. */
  running: boolean;
}

interface Job<I, O> {
  items: I[];
  costs: number[];
  results: O[];
  /** Next item not yet handed to a call. */
  next: number;
  /** Items whose result has not arrived. */
  remaining: number;
  done: boolean;
  arrived: number;
  resolve(results: O[]): void;
  reject(err: unknown): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Slot<I, O> {
  job: Job<I, O>;
  index: number;
  cost: number;
}

export class DynamicBatcher<I, O> {
  #pending: Job<I, O>[] = [];
  #pendingCost = 0;
  #pendingItems = 0;
  #running = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Rough seconds one call takes, for Retry-After. */
  #avgCallSeconds = 0.05;
  #stats = {
    batches: 0,
    inputs: 0,
    requests: 0,
    maxInputs: 0,
    counts: BATCH_SIZE_BUCKETS.map(() => 0),
    dropped: 0,
    rejected: 0,
    failed: 0,
  };

  constructor(readonly options: BatcherOptions<I, O>) {}

  /** Embeds (or whatever `run` does) the items of one request; resolves with their results in order. */
  submit(items: I[], signal?: AbortSignal): Promise<O[]> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (items.length === 0) return Promise.resolve([]);
    // An idle batcher always takes a request, so a queue size of 0 still serves one request at a time.
    const busy = this.#running || this.#pending.length > 0;
    if (busy && this.#pending.length >= this.options.maxWaiting) {
      this.#stats.rejected++;
      return Promise.reject(new QueueFull(this.retryAfterSeconds(), `Model \`${this.options.name}\``));
    }
    const { promise, resolve, reject } = Promise.withResolvers<O[]>();
    const costs = items.map((it) => Math.max(1, this.options.cost(it)));
    const job: Job<I, O> = {
      items,
      costs,
      results: new Array(items.length),
      next: 0,
      remaining: items.length,
      done: false,
      arrived: performance.now(),
      resolve,
      reject,
      signal,
    };
    if (signal) {
      job.onAbort = () => this.#drop(job);
      signal.addEventListener("abort", job.onAbort, { once: true });
    }
    this.#pending.push(job);
    this.#pendingCost += costs.reduce((a, b) => a + b, 0);
    this.#pendingItems += items.length;
    this.#kick();
    return promise;
  }

  stats(): BatcherStats {
    const s = this.#stats;
    return {
      batches: s.batches,
      inputs: s.inputs,
      requests: s.requests,
      maxInputs: s.maxInputs,
      inputsPerBatch: { buckets: [...BATCH_SIZE_BUCKETS], counts: [...s.counts] },
      dropped: s.dropped,
      rejected: s.rejected,
      failed: s.failed,
      waiting: this.#pending.length,
      running: this.#running,
    };
  }

  /** Seconds until the work ahead of a new request is likely done (at least 1). */
  retryAfterSeconds(): number {
    const calls = Math.ceil(this.#pendingCost / this.options.budget) + (this.#running ? 1 : 0);
    return Math.max(1, Math.ceil(calls * this.#avgCallSeconds));
  }

  #kick(): void {
    if (this.#running || this.#pending.length === 0) return;
    const eager = this.#pendingItems >= (this.options.eagerItems ?? Infinity);
    if (this.options.windowMs <= 0 || eager || this.#pendingCost >= this.options.budget) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      void this.#drain();
      return;
    }
    if (this.#timer !== undefined) return;
    const waited = performance.now() - this.#pending[0].arrived;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#drain();
    }, Math.max(0, this.options.windowMs - waited));
  }

  /** Runs calls until nothing waits; requests that arrive meanwhile join the next call without a new window. */
  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#pending.length > 0) {
        for (const chunk of this.#chunks(this.#take())) await this.#call(chunk);
      }
    } finally {
      this.#running = false;
    }
  }

  /** Takes waiting items in arrival order up to the budget (in real cost; at least one item). */
  #take(): Slot<I, O>[] {
    const slots: Slot<I, O>[] = [];
    let cost = 0;
    while (this.#pending.length > 0) {
      const job = this.#pending[0];
      while (job.next < job.items.length) {
        const c = job.costs[job.next];
        if (slots.length > 0 && cost + c > this.options.budget) return slots;
        slots.push({ job, index: job.next, cost: c });
        cost += c;
        this.#pendingCost -= c;
        this.#pendingItems--;
        job.next++;
      }
      this.#pending.shift();
    }
    return slots;
  }

  /** Sorts by cost and cuts into calls whose padded cost stays within the budget. */
  #chunks(slots: Slot<I, O>[]): Slot<I, O>[][] {
    slots.sort((a, b) => a.cost - b.cost);
    const chunks: Slot<I, O>[][] = [];
    let current: Slot<I, O>[] = [];
    for (const s of slots) {
      // Sorted ascending, so this item's cost is the new largest in the chunk.
      if (current.length > 0 && (current.length + 1) * s.cost > this.options.budget) {
        chunks.push(current);
        current = [];
      }
      current.push(s);
    }
    if (current.length > 0) chunks.push(current);
    return chunks;
  }

  async #call(chunk: Slot<I, O>[]): Promise<void> {
    const live = chunk.filter((s) => !s.job.done);
    if (live.length === 0) return;
    const started = performance.now();
    let outs: O[] | undefined;
    let error: unknown;
    try {
      outs = await this.options.run(live.map((s) => s.job.items[s.index]));
      if (outs.length !== live.length) {
        throw new Error(`batch gave ${outs.length} results for ${live.length} items`);
      }
    } catch (e) {
      error = e;
    }
    const seconds = (performance.now() - started) / 1000;
    this.#avgCallSeconds = this.#avgCallSeconds * 0.8 + seconds * 0.2;
    const jobs = new Set(live.map((s) => s.job));
    this.#record(live, jobs.size, seconds);
    if (outs) {
      live.forEach((s, i) => this.#deliver(s, outs[i]));
    } else if (jobs.size > 1) {
      // Someone's items broke the shared call: rerun each request's items alone so only that request fails.
      for (const job of jobs) await this.#call(live.filter((s) => s.job === job));
    } else {
      this.#fail([...jobs][0], error);
    }
  }

  #record(live: Slot<I, O>[], requests: number, seconds: number): void {
    const s = this.#stats;
    s.batches++;
    s.inputs += live.length;
    s.maxInputs = Math.max(s.maxInputs, live.length);
    s.counts[BATCH_SIZE_BUCKETS.findIndex((b) => live.length <= b)]++;
    const cost = live.reduce((a, x) => a + x.cost, 0);
    const padded = live.length * Math.max(...live.map((x) => x.cost));
    try {
      this.options.onBatch?.({
        inputs: live.length,
        requests,
        cost,
        paddedCost: padded,
        ms: +(seconds * 1000).toFixed(2),
      });
    } catch {
      // An observer must never break batching.
    }
  }

  #deliver(slot: Slot<I, O>, out: O): void {
    const job = slot.job;
    if (job.done) return;
    job.results[slot.index] = out;
    if (--job.remaining === 0) {
      this.#finish(job);
      this.#stats.requests++;
      job.resolve(job.results);
    }
  }

  #fail(job: Job<I, O>, err: unknown): void {
    if (job.done) return;
    this.#finish(job);
    this.#unqueue(job);
    this.#stats.failed++;
    job.reject(err);
  }

  #drop(job: Job<I, O>): void {
    if (job.done) return;
    this.#finish(job);
    this.#unqueue(job);
    this.#stats.dropped++;
    job.reject(job.signal!.reason);
  }

  #finish(job: Job<I, O>): void {
    job.done = true;
    if (job.onAbort) job.signal!.removeEventListener("abort", job.onAbort);
  }

  /** Removes a job's items that were not handed to a call yet. */
  #unqueue(job: Job<I, O>): void {
    const i = this.#pending.indexOf(job);
    if (i < 0) return;
    this.#pending.splice(i, 1);
    for (let k = job.next; k < job.items.length; k++) this.#pendingCost -= job.costs[k];
    this.#pendingItems -= job.items.length - job.next;
    if (this.#pending.length === 0) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }
}
