import assert from "node:assert/strict";
import { onStreamEnd, sseResponse } from "./sse.ts";
import { InvalidRequest } from "../errors.ts";

async function* events(n: number, failAt = -1): AsyncGenerator<unknown> {
  for (let i = 0; i < n; i++) {
    if (i === failAt) throw new InvalidRequest("broken", "x");
    yield { i };
  }
}

Deno.test("sse: events framed, [DONE] last, and the end told once the last one is enqueued", async () => {
  const res = await sseResponse(events(3));
  let ended = 0;
  assert.equal(onStreamEnd(res.body!, () => ended++), true);
  assert.equal(ended, 0, "not before the body is read");
  const text = await res.text();
  assert.equal(text, 'data: {"i":0}\n\ndata: {"i":1}\n\ndata: {"i":2}\n\ndata: [DONE]\n\n');
  assert.equal(ended, 1);
});

Deno.test("sse: the end is told when the client goes away (the source stopped) and after an error frame", async () => {
  let stopped = false;
  async function* endless() {
    try {
      for (let i = 0;; i++) yield { i };
    } finally {
      stopped = true;
    }
  }
  const res = await sseResponse(endless());
  let ended = 0;
  onStreamEnd(res.body!, () => ended++);
  const reader = res.body!.getReader();
  await reader.read();
  await reader.cancel();
  assert.equal(stopped, true);
  assert.equal(ended, 1);

  const failing = await sseResponse(events(3, 1));
  let failed = 0;
  onStreamEnd(failing.body!, () => failed++);
  const text = await failing.text();
  assert.match(text, /"message":"broken"/);
  assert.equal(failed, 1);
});

Deno.test("sse: a stream already ended tells at once; a body sseResponse did not make is not one", async () => {
  const empty = await sseResponse(events(0));
  let ended = 0;
  assert.equal(onStreamEnd(empty.body!, () => ended++), true);
  assert.equal(ended, 1);
  assert.equal(onStreamEnd(new Response("x").body!, () => {}), false);
});
