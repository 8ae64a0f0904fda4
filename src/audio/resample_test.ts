import assert from "node:assert/strict";
import { resample, SAMPLE_RATE, toMono } from "./resample.ts";

function tone(freq: number, rate: number, seconds: number): Float32Array {
  const n = Math.round(rate * seconds);
  return Float32Array.from({ length: n }, (_, i) => 0.5 * Math.sin((2 * Math.PI * freq * i) / rate));
}

function rms(x: Float32Array, skip = 200): number {
  let s = 0;
  for (let i = skip; i < x.length - skip; i++) s += x[i] * x[i];
  return Math.sqrt(s / Math.max(1, x.length - 2 * skip));
}

Deno.test("toMono averages channels and keeps mono as is", () => {
  const a = Float32Array.of(1, 1, 1), b = Float32Array.of(0, -1, 1, 5);
  assert.deepEqual([...toMono([a, b])], [0.5, 0, 1]);
  assert.equal(toMono([a]), a);
});

Deno.test("resample: output length follows the rate ratio for common rates", async () => {
  for (const rate of [8000, 11025, 22050, 44100, 48000, 96000]) {
    const out = await resample(tone(440, rate, 1), rate);
    assert.ok(Math.abs(out.length - SAMPLE_RATE) <= 2, `${rate}: ${out.length}`);
  }
  const same = tone(440, SAMPLE_RATE, 0.1);
  assert.equal(await resample(same, SAMPLE_RATE), same);
  await assert.rejects(resample(same, 0), RangeError);
});

Deno.test("resample: keeps the speech band and filters what 16 kHz cannot hold (no aliasing)", async () => {
  const kept = await resample(tone(3000, 44100, 0.5), 44100);
  assert.ok(Math.abs(rms(kept) - 0.5 / Math.SQRT2) < 0.02, `3 kHz rms ${rms(kept)}`);
  // 11 kHz is above the 8 kHz Nyquist limit: a naive decimator would fold it to 5 kHz at full strength.
  const removed = await resample(tone(11000, 44100, 0.5), 44100);
  assert.ok(rms(removed) < 0.01, `11 kHz leaked with rms ${rms(removed)}`);
});
