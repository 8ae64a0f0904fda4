import assert from "node:assert/strict";
import { EventOutbox, type OutboxClock, type OutboxItem } from "./outbox.ts";
import type { ChatEvent } from "../engines/types.ts";

/** A clock the test moves: immediates run on run(), timers when their time has come. */
class FakeClock implements OutboxClock {
  t = 0;
  immediates: (() => void)[] = [];
  timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;
  now = () => this.t;
  immediate = (fn: () => void) => void this.immediates.push(fn);
  timeout = (fn: () => void, ms: number) => {
    const id = this.#next++;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  };
  clear = (handle: unknown) => void this.timers.delete(handle as number);
  /** Advances to `t`, then runs what is due: timers first, then immediates (a round's end). */
  run(t = this.t): void {
    this.t = t;
    for (const [id, timer] of [...this.timers]) {
      if (timer.at <= t) {
        this.timers.delete(id);
        timer.fn();
      }
    }
    for (const fn of this.immediates.splice(0)) fn();
  }
}

const delta = (text: string): ChatEvent => ({
  type: "delta",
  choice: 0,
  delta: { content: text },
  logprobs: null,
  tokens: 1,
});
const start: ChatEvent = { type: "start", choice: 0 };
const finish: ChatEvent = {
  type: "finish",
  choice: 0,
  reason: "stop",
  completionTokens: 3,
  reasoningTokens: 0,
};

function setup(intervalMs: number) {
  const clock = new FakeClock();
  const sent: string[][] = [];
  const text = (items: OutboxItem[]) =>
    items.map(({ id, ev }) =>
      `${id}:${ev.type === "delta" ? (ev.delta as { content: string }).content : ev.type}`
    );
  const outbox = new EventOutbox((items) => sent.push(text(items)), intervalMs, clock);
  return { clock, sent, outbox };
}

Deno.test("outbox: without an interval every round's events go as one message at the round's end", () => {
  const { clock, sent, outbox } = setup(0);
  outbox.emit(1, start);
  outbox.emit(1, delta("a"));
  outbox.emit(2, delta("x"));
  assert.deepEqual(sent, []);
  clock.run(1);
  outbox.emit(1, delta("b"));
  clock.run(2);
  assert.deepEqual(sent, [["1:start", "1:a", "2:x"], ["1:b"]]);
});

Deno.test("outbox: a fast stream's tokens wait for the interval; its first token and its end never wait", () => {
  const { clock, sent, outbox } = setup(15);
  outbox.emit(1, start);
  clock.run(0);
  outbox.emit(1, delta("a")); // the choice's first token: at once
  clock.run(0);
  clock.t = 10;
  outbox.emit(1, delta("b")); // 10 ms after the last message: held
  clock.run(10);
  assert.deepEqual(sent, [["1:start"], ["1:a"]]);
  clock.t = 20;
  outbox.emit(1, delta("c")); // 20 ms: goes, with b
  clock.run(20);
  assert.deepEqual(sent.at(-1), ["1:b", "1:c"]);
  outbox.emit(1, delta("d")); // held again ...
  outbox.emit(1, finish); // ... until an event that is not a token
  clock.run(25);
  assert.deepEqual(sent.at(-1), ["1:d", "1:finish"]);
  assert.equal(clock.timers.size, 0);
});

Deno.test("outbox: a held token goes when its interval is up, if nothing else comes first", () => {
  const { clock, sent, outbox } = setup(15);
  outbox.emit(1, delta("a"));
  clock.run(0);
  outbox.emit(1, delta("b"));
  clock.run(14);
  assert.deepEqual(sent, [["1:a"]]);
  clock.run(15);
  assert.deepEqual(sent, [["1:a"], ["1:b"]]);
});

Deno.test("outbox: a slow model's tokens never wait", () => {
  const { clock, sent, outbox } = setup(15);
  for (let i = 0; i < 3; i++) {
    outbox.emit(1, delta(String(i)));
    clock.run(clock.t + 40);
  }
  assert.deepEqual(sent, [["1:0"], ["1:1"], ["1:2"]]);
});

Deno.test("outbox: each choice's first token, and a new job's, go at once; flush sends what waits, in order", () => {
  const { clock, sent, outbox } = setup(15);
  outbox.emit(1, delta("a"));
  clock.run(0);
  outbox.emit(1, { ...start, choice: 1 });
  outbox.emit(1, delta("b")); // choice 1's first token
  clock.run(1);
  outbox.emit(2, delta("x")); // job 2's first
  clock.run(2);
  outbox.emit(2, delta("y")); // held
  outbox.flush(); // another message is about to go: what waits goes first
  assert.deepEqual(sent, [["1:a"], ["1:start", "1:b"], ["2:x"], ["2:y"]]);
  outbox.end(2);
  outbox.emit(2, delta("z")); // a job id used again starts afresh
  clock.run(3);
  assert.deepEqual(sent.at(-1), ["2:z"]);
});
