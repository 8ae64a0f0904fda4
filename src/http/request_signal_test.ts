// Unit tests of a request's composed abort signal: sources, the wall-clock limit, the limit ending with the request.
import assert from "node:assert/strict";
import { RequestSignal } from "./request_signal.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("request signal: the limit aborts with a TimeoutError, counted from the request's start", async () => {
  const s = new RequestSignal([new AbortController().signal], 40);
  await sleep(20);
  const signal = s.signal;
  assert.equal(signal.aborted, false);
  await sleep(40);
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
