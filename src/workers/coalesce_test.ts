// ListCoalescer: a call goes at once, calls made while it runs go together next, each caller gets its own
// results, an aborted caller alone is rejected, a failed run fails its group only, and a group stays under
// its item cap.
import assert from "node:assert/strict";
import { ListCoalescer } from "./coalesce.ts";

/** A run that records its calls and answers when told. */
function gatedRun() {
  const calls: string[][] = [];
  const gates: { release(fail?: Error): void }[] = [];
  const run = (items: string[]) => {
    calls.push(items);
    return new Promise<string[]>((resolve, reject) => {
      gates.push({ release: (fail) => fail ? reject(fail) : resolve(items.map((s) => s.toUpperCase())) });
    });
  };
  return { calls, gates, run };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("coalesce: the first call goes at once, later ones wait and go together", async () => {
  const { calls, gates, run } = gatedRun();
  const c = new ListCoalescer(run);
  const a = c.call(["a"]);
  assert.deepEqual(calls, [["a"]], "no waiting for company when nothing is in flight");
  const b = c.call(["b", "c"]);
  const d = c.call(["d"]);
  await tick();
  assert.equal(calls.length, 1, "nothing more is sent while a call is in flight");
  gates[0].release();
  assert.deepEqual(await a, ["A"]);
  await tick();
  assert.deepEqual(calls[1], ["b", "c", "d"], "the waiting calls go as one");
  gates[1].release();
  assert.deepEqual(await b, ["B", "C"]);
  assert.deepEqual(await d, ["D"]);
});

Deno.test("coalesce: an aborted caller is rejected alone; one aborted before sending is left out", async () => {
  const { calls, gates, run } = gatedRun();
  const c = new ListCoalescer(run);
  const first = new AbortController();
  const a = c.call(["a"], first.signal);
  const waiting = new AbortController();
  const b = c.call(["b"], waiting.signal);
  const d = c.call(["d"]);
  first.abort(new Error("client gone"));
  await assert.rejects(a, /client gone/);
  waiting.abort(new Error("also gone"));
  await assert.rejects(b, /also gone/);
  gates[0].release();
  await tick();
  assert.deepEqual(calls[1], ["d"], "the aborted waiter's items are not sent");
  gates[1].release();
  assert.deepEqual(await d, ["D"]);
  await assert.rejects(c.call(["e"], AbortSignal.abort(new Error("already"))), /already/);
});

Deno.test("coalesce: a failed run fails its own group, the next group still runs", async () => {
  const { calls, gates, run } = gatedRun();
  const c = new ListCoalescer(run);
  const a = c.call(["a"]);
  const b = c.call(["b"]);
  gates[0].release(new Error("runner died"));
  await assert.rejects(a, /runner died/);
  await tick();
  assert.deepEqual(calls[1], ["b"]);
  gates[1].release();
  assert.deepEqual(await b, ["B"]);
});

Deno.test("coalesce: a group holds at most the cap's items, a larger list alone", async () => {
  const { calls, gates, run } = gatedRun();
  const c = new ListCoalescer(run, 3);
  const first = c.call(["a"]);
  const rest = [c.call(["b", "c"]), c.call(["d", "e"]), c.call(["f", "g", "h", "i"])];
  for (let i = 0; i < 4; i++) {
    gates[i].release();
    await tick();
  }
  assert.deepEqual(calls, [["a"], ["b", "c"], ["d", "e"], ["f", "g", "h", "i"]]);
  await first;
  assert.deepEqual(await Promise.all(rest), [["B", "C"], ["D", "E"], ["F", "G", "H", "I"]]);
});
