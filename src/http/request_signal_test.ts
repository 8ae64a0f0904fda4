// Unit tests of a request's composed abort signal: sources, the wall-clock limit, the limit ending with the request.
import assert from "node:assert/strict";
import { RequestSignal } from "./request_signal.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("request signal: the limit aborts with a TimeoutError, counted from the request's start", async () => {
  // Read 40 ms in, a 60 ms limit fires 20 ms later (at 60), not 60 ms later (at 100): checked at 70.
  const s = new RequestSignal([new AbortController().signal], 60);
  await sleep(40);
  const signal = s.signal;
  assert.equal(signal.aborted, false);
  await sleep(30);
  assert.equal(signal.aborted, true);
  assert.equal((signal.reason as DOMException).name, "TimeoutError");
  s.end();
});

Deno.test("request signal: asked for after the limit passed, it is already aborted", async () => {
  const s = new RequestSignal([], 10);
  await sleep(30);
  assert.equal(s.signal.aborted, true);
  assert.equal((s.signal.reason as DOMException).name, "TimeoutError");
});

Deno.test("request signal: ended, the limit no longer fires", async () => {
  const s = new RequestSignal([], 30);
  const signal = s.signal;
  s.end();
  await sleep(60);
  assert.equal(signal.aborted, false);
});

Deno.test("request signal: a source's abort (the client gone, the shutdown) comes through with its reason", () => {
  const client = new AbortController();
  const s = new RequestSignal([client.signal, new AbortController().signal], 0);
  client.abort(new DOMException("gone", "AbortError"));
  assert.equal(s.signal.aborted, true);
  assert.equal((s.signal.reason as DOMException).message, "gone");
  assert.equal(s.signal, s.signal, "one signal per request");
});
