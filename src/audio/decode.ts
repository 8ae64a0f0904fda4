// Owns the one entry point the API uses for uploaded audio: bytes in, 16 kHz mono float32 out, or an ApiError
// 400 on the `file` param that says what is wrong. Decoding runs in a short-lived worker so a long file never
// blocks the event loop; what the built-in decoders cannot read goes to ffmpeg when it is installed.
import { ApiError } from "../http/errors.ts";
import { AudioDecodeError, decodeToPcm, wavFormatTag } from "./decode_core.ts";
import type { DecodeReply } from "./decode_worker.ts";
import { decodeWithFfmpeg } from "./ffmpeg.ts";

export { SAMPLE_RATE } from "./resample.ts";

export interface DecodeOptions {
  signal?: AbortSignal;
  /** Try ffmpeg when the built-in decoders fail (default true). */
  ffmpeg?: boolean;
  /** Decode in a worker; default: only when decoding here could hold the event loop up (see `smallWav`). */
  worker?: boolean;
}

/**
 * A WAV file up to 1 MiB decodes on the calling thread in a few milliseconds (at most about 6 s of 44.1 kHz
 * stereo to resample), far less than starting a worker (about 60 ms); everything else goes to a worker.
 */
export function smallWav(bytes: Uint8Array): boolean {
  return bytes.byteLength <= 1 << 20 && wavFormatTag(bytes) !== undefined;
}

const WORKER_URL = new URL("./decode_worker.ts", import.meta.url);

function inWorker(bytes: Uint8Array, signal?: AbortSignal): Promise<Float32Array> {
  return new Promise((resolve, reject) => {
    let worker: Worker;
    try {
      worker = new Worker(WORKER_URL, { type: "module" });
    } catch {
      // Workers can be unavailable (e.g. a compiled binary built without the module): decode here instead.
      decodeToPcm(bytes).then(resolve, reject);
      return;
    }
    const done = () => {
      worker.terminate();
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      done();
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.onmessage = (e: MessageEvent<DecodeReply>) => {
      done();
      const r = e.data;
      if (r.ok) resolve(r.pcm);
      else reject(r.decodeError ? new AudioDecodeError(r.message) : new Error(r.message));
    };
    worker.onerror = (e) => {
      // The worker itself failed (its module could not load, say): the audio is not at fault, so decode here.
      e.preventDefault();
      done();
      decodeToPcm(bytes).then(resolve, reject);
    };
    // A copy goes over, so the caller's bytes stay usable for the ffmpeg fallback.
    worker.postMessage(bytes);
  });
}

/** Decodes an uploaded file. Throws ApiError 400 (param `file`) for empty, corrupt or unsupported audio. */
export async function decodeAudio(bytes: Uint8Array, opts: DecodeOptions = {}): Promise<Float32Array> {
  opts.signal?.throwIfAborted();
  if (bytes.byteLength === 0) throw ApiError.badRequest("The audio file is empty.", "file", "invalid_value");
  let first: unknown;
  try {
    const worker = opts.worker ?? !smallWav(bytes);
    return worker ? await inWorker(bytes, opts.signal) : await decodeToPcm(bytes);
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    first = err;
  }
  if (opts.ffmpeg !== false) {
    try {
      const pcm = await decodeWithFfmpeg(bytes, { signal: opts.signal });
      if (pcm && pcm.length > 0) return pcm;
    } catch {
      // ffmpeg could not read it either; the built-in decoder's message is the more useful one.
    }
  }
  const message = first instanceof AudioDecodeError
    ? first.message
    : "The audio file could not be decoded: it is corrupt or in an unsupported format.";
  throw ApiError.badRequest(
    `${message} Supported formats: flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, opus, wav, webm.`,
    "file",
    "invalid_value",
  );
}

/** Seconds of 16 kHz audio. */
export function durationOf(pcm: Float32Array): number {
  return pcm.length / 16_000;
}
