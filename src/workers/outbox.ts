// Owns when a model's chat events leave its compute side for the server: together, and for a fast stream no
// more often than a set interval. Events wait until the tasks now running have finished (an immediate), then
// go as one message: streams decoded together produce their tokens in the same round, and a message costs
// ~0.3 ms of the model's thread, so sixteen streams paid ~5 ms a round for sixteen. Any other message sends
// them first (flush), keeping the order.
//
// A token that comes less than `intervalMs` after the last message waits for the next one (two frames of a
// 60 Hz screen by default; FastChat's workers do the same by tokens, `stream_interval`): each message wakes
// the server's HTTP thread, ~0.45 ms of CPU on the very cores the model decodes on, so one stream at 80-110
// tokens/s lost that much of every 9-12 ms step (with the interval, 0.27-0.35 ms a token instead of
// 0.47-0.54). A message costs the server ~0.3 ms and a token ~0.05 beyond it (one Q4_0 stream at ~240
// tokens/s, schedstat: the HTTP process 0.13 ms a token at 15 ms, 0.09 at 30, its client 0.07 and 0.055),
// which is why the default is 30 ms rather than one frame. It waits at most until the interval is up, or
// until the model's thread runs timers again (it runs them between rounds only, so in practice the next
// round's message carries it). A round that reads a prompt would hold it for that whole round: the engine
// calls beforeLongWork first (serve_model.ts flushes this outbox there). A choice's first token and every
// event that is not a token go out at once: first-token latency and finish times are never held, nor is any
// token of a model slower than the interval.
import { setImmediate } from "node:timers";
import type { ChatEvent } from "../engines/types.ts";

export interface OutboxItem {
  id: number;
  ev: ChatEvent;
}

/** The scheduling an outbox uses (the real one below; tests give their own). */
export interface OutboxClock {
  now(): number;
  immediate(fn: () => void): void;
  timeout(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realClock: OutboxClock = {
  now: () => performance.now(),
  // Not setTimeout(0): Deno holds a timer back a millisecond at least.
  immediate: (fn) => void setImmediate(fn),
  timeout: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as number),
};

export class EventOutbox {
  #items: OutboxItem[] = [];
  #queued = false;
  #timer: unknown = undefined;
  #lastSent = -Infinity;
  /** Jobs whose current choice's first token has gone out (a later one may wait). */
  readonly #started = new Set<number>();
  /** flush() as a callback, made once (an immediate or a timer is set per message). */
  readonly #flush = () => this.flush();

  constructor(
    private readonly send: (items: OutboxItem[]) => void,
    /** 0: every round's tokens go at once. */
    public intervalMs: number,
    private readonly clock: OutboxClock = realClock,
  ) {}

  emit(id: number, ev: ChatEvent): void {
    this.#items.push({ id, ev });
    let hold = false;
    if (ev.type === "start") this.#started.delete(id);
    else if (ev.type === "delta") {
      const since = this.clock.now() - this.#lastSent;
      hold = this.#started.has(id) && since < this.intervalMs;
      this.#started.add(id);
      if (hold && !this.#queued && this.#timer === undefined) {
        this.#timer = this.clock.timeout(this.#flush, this.intervalMs - since);
      }
    }
    if (!hold && !this.#queued) {
      this.#queued = true;
      this.clock.immediate(this.#flush);
    }
  }

  /** Sends what waits now (before any other message, so the order holds). */
  flush(): void {
    this.#queued = false;
    if (this.#timer !== undefined) {
      this.clock.clear(this.#timer);
      this.#timer = undefined;
    }
    if (this.#items.length === 0) return;
    const items = this.#items;
    this.#items = [];
    this.#lastSent = this.clock.now();
    this.send(items);
  }

  /** Forgets a job that ended. */
  end(id: number): void {
    this.#started.delete(id);
  }
}
