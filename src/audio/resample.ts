// Owns turning decoded PCM (any rate, any channels) into what whisper wants: 16 kHz mono float32. Channels are
// averaged; the rate is converted by libsamplerate's band-limited sinc converter (compiled to wasm), which filters
// out what cannot be represented at 16 kHz instead of aliasing it into the speech band.
import lsr from "@alexanderolsen/libsamplerate-js";

export const SAMPLE_RATE = 16_000;

// The package is CommonJS: its named exports only exist on the default object.
const { create, ConverterType } = lsr as unknown as {
  create: (
    channels: number,
    from: number,
    to: number,
    opts: { converterType: number },
  ) => Promise<{ simple(x: Float32Array): Float32Array; destroy(): void }>;
  ConverterType: { SRC_SINC_FASTEST: number; SRC_SINC_MEDIUM_QUALITY: number };
};

/** Averages channels; a mono input is returned as is. Channels of unequal length are cut to the shortest. */
export function toMono(channels: readonly Float32Array[]): Float32Array {
  if (channels.length === 1) return channels[0];
  const n = Math.min(...channels.map((c) => c.length));
  const out = new Float32Array(n);
  for (const c of channels) for (let i = 0; i < n; i++) out[i] += c[i];
  const k = 1 / channels.length;
  for (let i = 0; i < n; i++) out[i] *= k;
  return out;
}

/**
 * Converts mono samples from `from` Hz to `to` Hz. SRC_SINC_FASTEST still keeps about 97 dB of stopband
 * attenuation, far beyond what speech recognition notices, at a fifth of the cost of the medium converter.
 */
export async function resample(x: Float32Array, from: number, to = SAMPLE_RATE): Promise<Float32Array> {
  if (!(from > 0) || !Number.isFinite(from)) throw new RangeError(`invalid sample rate ${from}`);
  if (from === to || x.length === 0) return x;
  const src = await create(1, from, to, { converterType: ConverterType.SRC_SINC_FASTEST });
  try {
    return src.simple(x);
  } finally {
    src.destroy();
  }
}

/** Mono and 16 kHz in one step. */
export async function toWhisperPcm(
  channels: readonly Float32Array[],
  sampleRate: number,
): Promise<Float32Array> {
  return await resample(toMono(channels), sampleRate);
}
