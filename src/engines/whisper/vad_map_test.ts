import assert from "node:assert/strict";
import { GAP_SECONDS, joinSpeech, toOriginal } from "./vad_map.ts";

const RATE = 100; // 100 Hz keeps the arithmetic readable

Deno.test("joinSpeech: cuts the spans out, merges overlaps, clamps, and puts a short gap between them", () => {
  const audio = Float32Array.from({ length: 1000 }, (_, i) => i); // 10 s where sample value = index
  const { audio: out, pieces } = joinSpeech(audio, [
    { start: 5, end: 6 },
    { start: 1, end: 2 },
    { start: 1.5, end: 2.5 },
    { start: 9.5, end: 12 },
    { start: 3, end: 3 },
  ], RATE);
  assert.deepEqual(pieces, [
    { joined: 0, start: 1, end: 2.5 },
    { joined: 1.5 + GAP_SECONDS, start: 5, end: 6 },
    { joined: 2.5 + 2 * GAP_SECONDS, start: 9.5, end: 10 },
  ]);
  assert.equal(out.length, (1.5 + 1 + 0.5 + 2 * GAP_SECONDS) * RATE);
  assert.equal(out[0], 100);
  assert.equal(out[149], 249);
  assert.equal(out[150], 0); // gap
  assert.equal(out[160], 500);
  assert.equal(joinSpeech(audio, [], RATE).pieces.length, 0);
});

Deno.test("toOriginal: shifts inside pieces and snaps gaps to the end of the speech before them", () => {
  const pieces = [{ joined: 0, start: 1, end: 2.5 }, { joined: 1.6, start: 5, end: 6 }];
  assert.equal(toOriginal(0, pieces), 1);
  assert.equal(toOriginal(1, pieces), 2);
  assert.equal(toOriginal(1.55, pieces), 2.5); // inside the gap
  assert.equal(toOriginal(1.6, pieces), 5);
  assert.ok(Math.abs(toOriginal(2.1, pieces) - 5.5) < 1e-9);
  assert.equal(toOriginal(9, pieces), 6); // past the end
  assert.equal(toOriginal(3, []), 3);
});
