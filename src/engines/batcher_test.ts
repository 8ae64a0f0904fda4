import assert from "node:assert/strict";
import { QueueFull } from "../errors.ts";
import { type BatchInfo, DynamicBatcher } from "./batcher.ts";

/** Items are strings; cost is their length; a call doubles them. Records every call. */
function fake(
  opts: {
    windowMs?: number;
    budget?: number;
    eagerItems?: number;
    maxWaiting?: number;
    callMs?: number;
    bad?: string;
  } = {},
) {
  const calls: string[][] = [];
  const infos: BatchInfo[] = [];
  const batcher = new DynamicBatcher<string, string>({
    name: "fake",
    windowMs: opts.windowMs ?? 5,
    budget: opts.budget ?? 1000,
    eagerItems: opts.eagerItems,
    maxWaiting: opts.maxWaiting ?? 16,
    cost: (s) => s.length,
    run: async (items) => {
      calls.push([...items]);
      if (opts.callMs) await new Promise((r) => setTimeout(r, opts.callMs));
      if (opts.bad && items.includes(opts.bad)) throw new Error("bad item in call");
      return items.map((s) => s + s);
    },
    onBatch: (i) => infos.push(i),
  });
  return { batcher, calls, infos };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("batcher: concurrent requests share one call, sorted by cost, results split back in order", async () => {
  const { batcher, calls, infos } = fake();
  const [a, b, c] = await Promise.all([
    batcher.submit(["ccc", "a"]),
    batcher.submit(["bb"]),
    batcher.submit(["dddd", "e"]),
  ]);
  assert.deepEqual(a, ["cccccc", "aa"]);
  assert.deepEqual(b, ["bbbb"]);
  assert.deepEqual(c, ["dddddddd", "ee"]);
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].map((s) => s.length), [1, 1, 2, 3, 4]);
  assert.equal(infos[0].requests, 3);
  assert.equal(infos[0].inputs, 5);
  assert.equal(infos[0].paddedCost, 20);
  const st = batcher.stats();
  assert.equal(st.batches, 1);
  assert.equal(st.inputs, 5);
  assert.equal(st.requests, 3);
  assert.equal(st.maxInputs, 5);
  assert.equal(st.inputsPerBatch.counts[st.inputsPerBatch.buckets.indexOf(8)], 1);
});

Deno.test("batcher: the window gathers requests that arrive a little apart", async () => {
  const { batcher, calls } = fake({ windowMs: 30 });
  const first = batcher.submit(["a"]);
  await sleep(5);
  const second = batcher.submit(["b"]);
  await Promise.all([first, second]);
  assert.equal(calls.length, 1);
});

Deno.test("batcher: a full budget runs at once instead of waiting out the window", async () => {
  const { batcher, calls } = fake({ windowMs: 60_000, budget: 8 });
  const t0 = performance.now();
  const out = await batcher.submit(["aaaa", "bbbb"]);
  assert.deepEqual(out, ["aaaaaaaa", "bbbbbbbb"]);
  assert.ok(performance.now() - t0 < 1000);
  assert.equal(calls.length, 1);
});

Deno.test("batcher: enough waiting items run at once; fewer wait for the window", async () => {
  const { batcher, calls } = fake({ windowMs: 60_000, eagerItems: 3 });
  const t0 = performance.now();
  assert.deepEqual(await batcher.submit(["a", "b", "c"]), ["aa", "bb", "cc"]);
  assert.ok(performance.now() - t0 < 1000);
  await sleep(1); // let the finished call's drain loop end
  // Two small requests reach the threshold together.
  const first = batcher.submit(["d"]);
  await sleep(5);
  assert.equal(calls.length, 1, "a lone small request waits");
  await Promise.all([first, batcher.submit(["e", "f"])]);
  assert.equal(calls.length, 2);
  assert.deepEqual(calls[1], ["d", "e", "f"]);
});

Deno.test("batcher: calls stay within the padded budget; an oversized item runs alone", async () => {
  const { batcher, calls, infos } = fake({ budget: 12 });
  const items = ["aaa", "bbb", "cccc", "dddddd", "x".repeat(20), "ee"];
  const out = await batcher.submit(items);
  assert.deepEqual(out, items.map((s) => s + s));
  for (const info of infos) {
    assert.ok(info.paddedCost <= 12 || info.inputs === 1, JSON.stringify(info));
  }
  assert.ok(calls.some((c) => c.length === 1 && c[0].length === 20));
  assert.equal(calls.flat().length, items.length);
});

Deno.test("batcher: requests arriving during a call join the next one, without a new window", async () => {
  const { batcher, calls } = fake({ windowMs: 1, callMs: 40 });
  const first = batcher.submit(["a"]);
  await sleep(10); // the first call is running now
  const t0 = performance.now();
  const rest = Array.from({ length: 5 }, (_, i) => batcher.submit([`r${i}`]));
  await Promise.all([first, ...rest]);
  assert.equal(calls.length, 2);
  assert.equal(calls[1].length, 5);
  assert.ok(performance.now() - t0 < 200);
});

Deno.test("batcher: a full queue gives QueueFull with a retry time; an idle batcher takes a request even at size 0", async () => {
  const { batcher } = fake({ maxWaiting: 2, callMs: 30 });
  const running = batcher.submit(["a"]);
  await sleep(10);
  const waiting = [batcher.submit(["b"]), batcher.submit(["c"])];
  await assert.rejects(batcher.submit(["d"]), (e: unknown) => {
    assert.ok(e instanceof QueueFull);
    assert.ok(e.retryAfterSeconds >= 1);
    return true;
  });
  assert.deepEqual(await running, ["aa"]);
  await Promise.all(waiting);
  assert.equal(batcher.stats().rejected, 1);

  const zero = fake({ maxWaiting: 0 }).batcher;
  assert.deepEqual(await zero.submit(["z"]), ["zz"]);
});

Deno.test("batcher: a request whose caller went away before its call is dropped; others are served", async () => {
  const { batcher, calls } = fake({ windowMs: 20 });
  const gone = new AbortController();
  const dropped = batcher.submit(["gone"], gone.signal);
  const kept = batcher.submit(["kept"]);
  gone.abort(new DOMException("client went away", "AbortError"));
  await assert.rejects(dropped, (e: unknown) => e instanceof DOMException && e.name === "AbortError");
  assert.deepEqual(await kept, ["keptkept"]);
  assert.deepEqual(calls, [["kept"]]);
  assert.equal(batcher.stats().dropped, 1);

  const already = new AbortController();
  already.abort();
  await assert.rejects(batcher.submit(["x"], already.signal));
  assert.equal(calls.length, 1);
});

Deno.test("batcher: an item that breaks the shared call fails only its own request", async () => {
  const { batcher } = fake({ bad: "boom" });
  const results = await Promise.allSettled([
    batcher.submit(["ok1"]),
    batcher.submit(["boom", "x"]),
    batcher.submit(["ok2", "ok3"]),
  ]);
  assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
  assert.deepEqual((results[2] as PromiseFulfilledResult<string[]>).value, ["ok2ok2", "ok3ok3"]);
  assert.equal(batcher.stats().failed, 1);
  // The batcher keeps working afterwards.
  assert.deepEqual(await batcher.submit(["again"]), ["againagain"]);
});

Deno.test("batcher: a request larger than the budget spans calls and keeps its order", async () => {
  const { batcher, calls } = fake({ budget: 10 });
  const items = Array.from({ length: 25 }, (_, i) => "x".repeat((i % 4) + 1) + i);
  const out = await batcher.submit(items);
  assert.deepEqual(out, items.map((s) => s + s));
  assert.ok(calls.length > 3);
  assert.deepEqual(batcher.submit([]) instanceof Promise, true);
  assert.deepEqual(await batcher.submit([]), []);
});
