import assert from "node:assert/strict";
import { encodeFrame, FrameReader } from "./frames.ts";

Deno.test("frames: messages come back whole however the bytes are cut, typed arrays included", () => {
  const messages = [
    { t: "events", items: [{ id: 1, ev: { type: "delta", content: "héllo 🙂" } }] },
    { t: "result", id: 2, value: [new Float32Array([1.5, -2, 3.25])] },
    { t: "end", id: 3, extra: undefined },
  ];
  const bytes = new Uint8Array(messages.flatMap((m) => [...encodeFrame(m)]));
  for (const cut of [1, 3, 7, 8, 9, 64, bytes.length]) {
    const reader = new FrameReader();
    const got: unknown[] = [];
    for (let i = 0; i < bytes.length; i += cut) got.push(...reader.push(bytes.slice(i, i + cut)).messages);
    assert.deepEqual(got, messages, `cut every ${cut} bytes`);
  }
});

Deno.test("frames: bytes a native library printed between frames are stepped over and handed back", () => {
  const a = encodeFrame({ t: "end", id: 1 });
  const b = encodeFrame({ t: "end", id: 2 });
  const noise = new TextEncoder().encode("llama_model_load: printing to stdout\n");
  const reader = new FrameReader();
  const first = reader.push(new Uint8Array([...a, ...noise]));
  const second = reader.push(b);
  assert.deepEqual([...first.messages, ...second.messages], [{ t: "end", id: 1 }, { t: "end", id: 2 }]);
  const stray = [...first.stray, ...second.stray].map((s) => new TextDecoder().decode(s)).join("");
  assert.equal(stray, "llama_model_load: printing to stdout\n");
});

Deno.test("frames: chunks read into one reused buffer (as the server reads a runner) keep their messages", () => {
  const messages = [
    { t: "result", id: 1, value: [new Float32Array([0.5, 1.5, -3])] },
    { t: "events", items: [{ id: 2, ev: { type: "delta", content: "abc" } }] },
    { t: "result", id: 3, value: [new Float32Array([7, 8])] },
  ];
  const bytes = new Uint8Array(messages.flatMap((m) => [...encodeFrame(m)]));
  const scratch = new Uint8Array(5);
  const reader = new FrameReader();
  const got: unknown[] = [];
  for (let i = 0; i < bytes.length; i += scratch.length) {
    const n = Math.min(scratch.length, bytes.length - i);
    scratch.set(bytes.subarray(i, i + n));
    got.push(...reader.push(scratch.subarray(0, n)).messages);
    scratch.fill(0xff); // the next read overwrites it
  }
  assert.deepEqual(got, messages);
});
