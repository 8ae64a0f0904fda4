// Owns the framing of messages between the server and a model's runner process (runner.ts): each message is
// V8's structured-clone serialization (node:v8, the same data a Worker's postMessage carries: typed arrays,
// Maps, undefined) behind a 4-byte magic and a 4-byte length. The magic lets the reader step over bytes a
// native library printed to the runner's stdout instead of losing the stream to them.
import { deserialize, serialize } from "node:v8";

const MAGIC = 0x4f41494d; // "OAIM"
const HEADER = 8;

/** One message as a frame. */
export function encodeFrame(message: unknown): Uint8Array {
  const body = serialize(message);
  const out = new Uint8Array(HEADER + body.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC);
  view.setUint32(4, body.length);
  out.set(body, HEADER);
  return out;
}

/**
 * Reassembles frames from chunks of a byte stream, as they arrive. A chunk is copied in before push returns,
 * so the caller may read the next one into the same buffer (the server does: a fresh 64 KiB buffer per read
 * of a runner's stdout cost ~50 µs of the HTTP thread per streamed token, most of it the garbage collector's).
 */
export class FrameReader {
  #buf = new Uint8Array(4096);
  /** Bytes held, from #buf[0]. */
  #len = 0;

  /**
   * Adds a chunk; returns the messages it completed, and any bytes that were not frames (stray output), in
   * the order they came.
   */
  push(chunk: Uint8Array): { messages: unknown[]; stray: Uint8Array[] } {
    if (this.#len + chunk.length > this.#buf.length) {
      const grown = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + chunk.length));
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    this.#buf.set(chunk, this.#len);
    this.#len += chunk.length;
    const buf = this.#buf;
    const messages: unknown[] = [];
    const stray: Uint8Array[] = [];
    let at = 0;
    while (this.#len - at >= HEADER) {
      const view = new DataView(buf.buffer, buf.byteOffset + at);
      if (view.getUint32(0) !== MAGIC) {
        const next = findMagic(buf, at + 1, this.#len);
        // Without a magic in sight, keep the last bytes: they may be the start of one still arriving.
        const end = next < 0 ? this.#len - (HEADER - 1) : next;
        stray.push(buf.slice(at, end));
        at = end;
        continue;
      }
      const len = view.getUint32(4);
      if (this.#len - at < HEADER + len) break;
      // A copy: node:v8's deserialize makes typed arrays views of the bytes it is given, and these are reused.
      messages.push(deserialize(buf.slice(at + HEADER, at + HEADER + len)));
      at += HEADER + len;
    }
    if (at > 0) {
      buf.copyWithin(0, at, this.#len);
      this.#len -= at;
    }
    return { messages, stray };
  }
}

function findMagic(buf: Uint8Array, from: number, end: number): number {
  for (let i = from; i + 4 <= end; i++) {
    if (buf[i] === 0x4f && buf[i + 1] === 0x41 && buf[i + 2] === 0x49 && buf[i + 3] === 0x4d) return i;
  }
  return -1;
}
