// Owns decoding audio bytes to 16 kHz mono float32 with the pure JS/wasm decoders of `audio-decode` (wav in any
// PCM or float width, mp3, flac, ogg vorbis/opus, webm, m4a/mp4 aac, and more), so a compiled server needs no
// system libraries. Runs wherever it is called: decode.ts calls it inside a worker so long files never stall
// the event loop. Failures are AudioDecodeError with a message meant for the client.
import decode from "audio-decode";
import { toWhisperPcm } from "./resample.ts";

export class AudioDecodeError extends Error {
  override name = "AudioDecodeError";
}

/** WAV encodings the built-in decoder reads correctly: PCM, IEEE float, A-law, mu-law, and the extensible form. */
const WAV_TAGS = new Set([1, 3, 6, 7, 0xfffe]);

/** The format tag of a RIFF/WAVE file's fmt chunk; undefined when it is not one or has none. */
export function wavFormatTag(bytes: Uint8Array): number | undefined {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fourcc = (o: number) => String.fromCharCode(...bytes.subarray(o, o + 4));
  if (bytes.length < 12 || fourcc(0) !== "RIFF" || fourcc(8) !== "WAVE") return undefined;
  for (let o = 12; o + 10 <= bytes.length;) {
    const size = dv.getUint32(o + 4, true);
    if (fourcc(o) === "fmt ") return dv.getUint16(o + 8, true);
    o += 8 + size + (size & 1);
  }
  return undefined;
}

/** Throws AudioDecodeError when the bytes are not audio the decoders understand or hold no samples. */
export async function decodeToPcm(bytes: Uint8Array): Promise<Float32Array> {
  if (bytes.byteLength === 0) throw new AudioDecodeError("The audio file is empty.");
  const tag = wavFormatTag(bytes);
  if (tag !== undefined && !WAV_TAGS.has(tag)) {
    // e.g. ADPCM, which the built-in decoder would misread as PCM instead of refusing.
    throw new AudioDecodeError(`WAV encoding 0x${tag.toString(16)} is not supported.`);
  }
  let decoded: { channelData: Float32Array[]; sampleRate: number };
  try {
    decoded = await decode(bytes);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new AudioDecodeError(
      /unknown audio format|no decoder/i.test(why)
        ? "The audio file is in an unsupported format or corrupt."
        : `The audio file could not be decoded: ${why}.`,
    );
  }
  const channels = Array.isArray(decoded?.channelData)
    ? decoded.channelData.filter((c) => c instanceof Float32Array)
    : [];
  if (!channels.length || !channels.some((c) => c.length > 0) || !(decoded.sampleRate > 0)) {
    throw new AudioDecodeError("The audio file contains no audio samples.");
  }
  const pcm = await toWhisperPcm(channels, decoded.sampleRate);
  // Corrupt streams occasionally decode to NaN/Infinity, which whisper would turn into garbage.
  for (let i = 0; i < pcm.length; i++) if (!Number.isFinite(pcm[i])) pcm[i] = 0;
  return pcm;
}
