// Owns the worker side of audio decoding: one message in (the file's bytes), one message out (16 kHz mono
// samples, transferred, or the decode error's message), then the worker is terminated by its caller.
/// <reference lib="deno.worker" />
import { AudioDecodeError, decodeToPcm } from "./decode_core.ts";

export type DecodeReply = { ok: true; pcm: Float32Array } | {
  ok: false;
  message: string;
  decodeError: boolean;
};

self.onmessage = async (e: MessageEvent<Uint8Array>) => {
  let reply: DecodeReply;
  try {
    const pcm = await decodeToPcm(e.data);
    reply = { ok: true, pcm };
    try {
      self.postMessage(reply, [pcm.buffer as ArrayBuffer]);
    } catch {
      // A view into a decoder's wasm memory cannot be transferred; a copy can.
      self.postMessage({ ok: true, pcm: pcm.slice() });
    }
    return;
  } catch (err) {
    reply = {
      ok: false,
      message: err instanceof Error ? err.message : String(err),
      decodeError: err instanceof AudioDecodeError,
    };
  }
  self.postMessage(reply);
};
