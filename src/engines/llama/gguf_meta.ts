// Owns reading a GGUF file's metadata before llama.cpp loads it (how many layers it has, to decide how many fit
// on the GPU). Reads the header's key/value section only, never the tensors; returns scalars and strings,
// skipping arrays (the vocabulary) without decoding them.
const TYPE_SIZES: Record<number, number> = {
  0: 1,
  1: 1,
  2: 2,
  3: 2,
  4: 4,
  5: 4,
  6: 4,
  7: 1,
  10: 8,
  11: 8,
  12: 8,
};
const STRING = 8;
const ARRAY = 9;
/** The most of the file read: metadata past this (a huge vocabulary first) is left unread. */
const LIMIT = 64 * 2 ** 20;

/** Scalar and string metadata of a GGUF file; empty when it is not one (llama.cpp will say why at load). */
export function readGgufMeta(path: string): Map<string, number | string | boolean> {
  const out = new Map<string, number | string | boolean>();
  let file: Deno.FsFile | undefined;
  try {
    file = Deno.openSync(path, { read: true });
    const size = Math.min(file.statSync().size, LIMIT);
    const buf = new Uint8Array(size);
    let got = 0;
    while (got < size) {
      const n = file.readSync(buf.subarray(got));
      if (!n) break;
      got += n;
    }
    const view = new DataView(buf.buffer, 0, got);
    const text = new TextDecoder();
    let at = 0;
    const u64 = () => {
      const v = Number(view.getBigUint64(at, true));
      at += 8;
      return v;
    };
    const str = () => {
      const n = u64();
      const s = text.decode(buf.subarray(at, at + n));
      at += n;
      return s;
    };
    // `at += u64()` would add to the offset read before u64 moved it: take the length first.
    const skipString = () => {
      const n = u64();
      at += n;
    };
    const skip = (type: number): void => {
      if (type === STRING) skipString();
      else if (type === ARRAY) {
        const inner = view.getUint32(at, true);
        at += 4;
        const n = u64();
        if (inner === STRING) { for (let i = 0; i < n; i++) skipString(); }
        else if (TYPE_SIZES[inner] !== undefined) at += n * TYPE_SIZES[inner];
        else throw new Error("bad array");
      } else if (TYPE_SIZES[type] !== undefined) at += TYPE_SIZES[type];
      else throw new Error("bad type");
    };
    if (view.getUint32(0, true) !== 0x46554747) return out; // "GGUF"
    at = 8; // magic, version
    u64(); // tensors
    const kvs = u64();
    for (let i = 0; i < kvs; i++) {
      const key = str();
      const type = view.getUint32(at, true);
      at += 4;
      const start = at;
      switch (type) {
        case 0:
          out.set(key, view.getUint8(at));
          break;
        case 1:
          out.set(key, view.getInt8(at));
          break;
        case 2:
          out.set(key, view.getUint16(at, true));
          break;
        case 3:
          out.set(key, view.getInt16(at, true));
          break;
        case 4:
          out.set(key, view.getUint32(at, true));
          break;
        case 5:
          out.set(key, view.getInt32(at, true));
          break;
        case 6:
          out.set(key, view.getFloat32(at, true));
          break;
        case 7:
          out.set(key, view.getUint8(at) !== 0);
          break;
        case 10:
          out.set(key, Number(view.getBigUint64(at, true)));
          break;
        case 11:
          out.set(key, Number(view.getBigInt64(at, true)));
          break;
        case 12:
          out.set(key, view.getFloat64(at, true));
          break;
        case STRING:
          out.set(key, str());
          continue;
      }
      at = start;
      skip(type);
    }
  } catch {
    // truncated, past the limit, or not readable: what was read stands
  } finally {
    file?.close();
  }
  return out;
}

/** The model's repeating layers (`<arch>.block_count`), 0 when unknown. */
export function blockCount(meta: Map<string, number | string | boolean>): number {
  const arch = meta.get("general.architecture");
  const n = typeof arch === "string" ? meta.get(`${arch}.block_count`) : undefined;
  return typeof n === "number" ? n : 0;
}
