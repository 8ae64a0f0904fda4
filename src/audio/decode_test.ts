import assert from "node:assert/strict";
import { ApiError } from "../http/errors.ts";
import { decodeAudio, SAMPLE_RATE, smallWav } from "./decode.ts";
import { AudioDecodeError, decodeToPcm } from "./decode_core.ts";

type Format = {
  bits: 8 | 16 | 24 | 32;
  float?: boolean;
  channels: number;
  rate: number;
  extensible?: boolean;
};

/** A WAV file of a 440 Hz tone in the given sample format (written here so the test covers every width). */
function wav(f: Format, seconds: number): Uint8Array<ArrayBuffer> {
  const frames = Math.round(f.rate * seconds);
  const width = f.bits / 8, block = width * f.channels;
  const fmtSize = f.extensible ? 40 : 16;
  const dv = new DataView(new ArrayBuffer(20 + fmtSize + 8 + frames * block));
  const ascii = (o: number, s: string) => [...s].forEach((c, i) => dv.setUint8(o + i, c.charCodeAt(0)));
  ascii(0, "RIFF");
  dv.setUint32(4, dv.byteLength - 8, true);
  ascii(8, "WAVEfmt ");
  dv.setUint32(16, fmtSize, true);
  const tag = f.float ? 3 : 1;
  dv.setUint16(20, f.extensible ? 0xfffe : tag, true);
  dv.setUint16(22, f.channels, true);
  dv.setUint32(24, f.rate, true);
  dv.setUint32(28, f.rate * block, true);
  dv.setUint16(32, block, true);
  dv.setUint16(34, f.bits, true);
  if (f.extensible) {
    dv.setUint16(36, 22, true);
    dv.setUint16(38, f.bits, true);
    dv.setUint32(40, 0, true);
    // SubFormat GUID: the format tag followed by the fixed KSDATAFORMAT suffix.
    const guid = [tag, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71];
    guid.forEach((b, i) => dv.setUint8(44 + i, b));
  }
  const data = 20 + fmtSize;
  ascii(data, "data");
  dv.setUint32(data + 4, frames * block, true);
  for (let i = 0; i < frames; i++) {
    const x = 0.5 * Math.sin((2 * Math.PI * 440 * i) / f.rate);
    for (let c = 0; c < f.channels; c++) {
      const o = data + 8 + i * block + c * width;
      if (f.float) dv.setFloat32(o, x, true);
      else if (f.bits === 8) dv.setUint8(o, Math.round(128 + x * 127));
      else if (f.bits === 16) dv.setInt16(o, Math.round(x * 32767), true);
      else if (f.bits === 24) {
        const v = Math.round(x * 8388607);
        dv.setUint8(o, v & 0xff);
        dv.setInt16(o + 1, v >> 8, true);
      } else dv.setInt32(o, Math.round(x * 2147483647), true);
    }
  }
  return new Uint8Array(dv.buffer);
}

function peak(x: Float32Array): number {
  let p = 0;
  for (const v of x) p = Math.max(p, Math.abs(v));
  return p;
}

Deno.test("decode: WAV of every width, float, any rate and channel count becomes 16 kHz mono", async () => {
  const formats: Format[] = [
    { bits: 8, channels: 1, rate: 8000 },
    { bits: 16, channels: 2, rate: 44100 },
    { bits: 24, channels: 1, rate: 48000 },
    { bits: 32, channels: 6, rate: 22050 },
    { bits: 32, float: true, channels: 2, rate: 16000 },
    { bits: 16, channels: 3, rate: 32000, extensible: true },
  ];
  for (const f of formats) {
    const pcm = await decodeToPcm(wav(f, 1.5));
    const label = JSON.stringify(f);
    assert.ok(Math.abs(pcm.length / SAMPLE_RATE - 1.5) < 0.002, `${label}: ${pcm.length} samples`);
    assert.ok(Math.abs(peak(pcm) - 0.5) < 0.03, `${label}: peak ${peak(pcm)}`);
  }
});

Deno.test("decode: empty, corrupt and non-audio bytes are 400s on `file`", async () => {
  const bad = [
    new Uint8Array(0),
    crypto.getRandomValues(new Uint8Array(3000)),
    new TextEncoder().encode("just some text, not audio"),
    wav({ bits: 16, channels: 1, rate: 16000 }, 1).slice(0, 44 - 8), // header cut before the data chunk
  ];
  for (const bytes of bad) {
    const err = await decodeAudio(bytes, { ffmpeg: false }).then(() => null, (e) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.param, "file");
  }
  await assert.rejects(decodeToPcm(new Uint8Array(0)), AudioDecodeError);
});

/** Sun .au, 16-bit big-endian PCM: a container the built-in decoders lack, so ffmpeg has to step in. */
function au(rate: number, seconds: number): Uint8Array<ArrayBuffer> {
  const n = Math.round(rate * seconds);
  const dv = new DataView(new ArrayBuffer(24 + 2 * n));
  [0x2e736e64, 24, 2 * n, 3, rate, 1].forEach((v, i) => dv.setUint32(4 * i, v));
  for (let i = 0; i < n; i++) dv.setInt16(24 + 2 * i, Math.round(16000 * Math.sin(i / 5)));
  return new Uint8Array(dv.buffer);
}

const hasFfmpeg = await new Deno.Command("ffmpeg", { args: ["-version"], stdout: "null", stderr: "null" })
  .output().then((o) => o.success, () => false);

Deno.test("decode: the worker and the in-thread path agree; an aborted request stops", async () => {
  const bytes = wav({ bits: 16, channels: 2, rate: 44100 }, 1);
  const a = await decodeAudio(bytes, { worker: true });
  const b = await decodeAudio(bytes, { worker: false });
  assert.deepEqual(await decodeAudio(bytes), b);
  assert.deepEqual(a, b);
  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(decodeAudio(bytes, { signal: aborted.signal }));
});

Deno.test({
  name: "decode: ffmpeg reads containers the built-in decoders lack (.au)",
  ignore: !hasFfmpeg,
  fn: async () => {
    const pcm = await decodeAudio(au(8000, 1.25));
    assert.ok(Math.abs(pcm.length / SAMPLE_RATE - 1.25) < 0.01, `${pcm.length}`);
    await assert.rejects(decodeAudio(au(8000, 1), { ffmpeg: false }), ApiError);
  },
});

Deno.test("decode: small WAV files decode on the calling thread, the rest in a worker", () => {
  assert.equal(smallWav(wav({ bits: 16, channels: 1, rate: 16000 }, 1)), true);
  assert.equal(smallWav(wav({ bits: 16, channels: 2, rate: 48000 }, 6)), false);
  assert.equal(smallWav(new TextEncoder().encode("ID3 not a wav")), false);
});

Deno.test("decode: WAV encodings the built-in decoder would misread are refused, not garbled", async () => {
  const adpcm = wav({ bits: 16, channels: 1, rate: 8000 }, 0.5);
  new DataView(adpcm.buffer).setUint16(20, 0x11, true); // IMA ADPCM
  await assert.rejects(decodeToPcm(adpcm), /0x11 is not supported/);
});
