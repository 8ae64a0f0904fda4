// Owns the one entry point the API uses for uploaded audio: bytes in, 16 kHz mono float32 out, or an ApiError
// 400 on the `file` param that says what is wrong. Decoding runs in a short-lived worker so a long file never
// blocks the event loop; what the built-in decoders cannot read goes to ffmpeg when it is installed.
import { ApiError } from "../http/errors.ts";
import { AudioDecodeError, decodeToPcm } from "./decode_core.ts";
import type { DecodeReply } from "./decode_worker.ts";
import { decodeWithFfmpeg } from "./ffmpeg.ts";

export { SAMPLE_RATE } from "./resample.ts";

export interface DecodeOptions {
  signal?: AbortSignal;
  /** Try ffmpeg when the built-in decoders fail (default true). */
  ffmpeg?: boolean;
  /** Decode in a worker (default true); false decodes on the calling thread. */
  worker?: boolean;
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
      e.preventDefault();
      done();
      reject(new Error(`audio decode worker failed: ${e.message}`));
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
    return opts.worker === false ? await decodeToPcm(bytes) : await inWorker(bytes, opts.signal);
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
