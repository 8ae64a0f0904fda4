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

/** Reassembles frames from chunks of a byte stream, as they arrive. */
export class FrameReader {
  #buf: Uint8Array = new Uint8Array(0);

  /**
   * Adds a chunk; returns the messages it completed, and any bytes that were not frames (stray output), in
   * the order they came.
   */
  push(chunk: Uint8Array): { messages: unknown[]; stray: Uint8Array[] } {
    this.#buf = this.#buf.length === 0 ? chunk : concat(this.#buf, chunk);
    const messages: unknown[] = [];
    const stray: Uint8Array[] = [];
    let at = 0;
    while (this.#buf.length - at >= HEADER) {
      const view = new DataView(this.#buf.buffer, this.#buf.byteOffset + at);
      if (view.getUint32(0) !== MAGIC) {
        const next = findMagic(this.#buf, at + 1);
        // Without a magic in sight, keep the last bytes: they may be the start of one still arriving.
        const end = next < 0 ? this.#buf.length - (HEADER - 1) : next;
        stray.push(this.#buf.slice(at, end));
        at = end;
        continue;
      }
      const len = view.getUint32(4);
      if (this.#buf.length - at < HEADER + len) break;
      messages.push(deserialize(this.#buf.subarray(at + HEADER, at + HEADER + len)));
      at += HEADER + len;
    }
    this.#buf = at === 0 ? this.#buf : this.#buf.slice(at);
    return { messages, stray };
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function findMagic(buf: Uint8Array, from: number): number {
  for (let i = from; i + 4 <= buf.length; i++) {
    if (buf[i] === 0x4f && buf[i + 1] === 0x41 && buf[i + 2] === 0x49 && buf[i + 3] === 0x4d) return i;
  }
  return -1;
}
