// Owns a decoder run on onnxruntime's C API (ort_ffi.ts) with its KV cache in place: each cache is one buffer per
// past/present pair, fed as the past and bound as the present, which GroupQueryAttention (the fused layout of
// onnxruntime-genai's model builder, `-ONNX-GQA` repos) then appends to where it lies (its shared-buffer mode:
// the valid length comes from the attention mask). No token copies the cache: against onnxruntime-node's
// concat-then-copy-out, decode on the SmolLM2-135M shape went from ~200 to ~270 tok/s at 150 positions and from
// ~70 to ~170 at 1000. A buffer grows by doubling (a copy of the valid positions); a cache shared by forks is
// copied before a sequence writes to it. Graphs that concatenate their cache (decomposed attention) don't take
// an in-place present: their first run fails and the backend keeps to transformers.js.
import { Buffer } from "node:buffer";
import { NativeSession, type NativeTensor, OFF_HEAP_BYTES, openOrt, ortUnavailable } from "./ort_ffi.ts";

/** Inputs a native run feeds; a decoder taking any other (besides its cache) stays with transformers.js. */
const FED = new Set(["input_ids", "attention_mask", "position_ids", "num_logits_to_keep"]);
/** Positions a cache buffer grows by, at least. */
const GRANULE = 256;

/** One sequence's cache: a buffer per past input, `capacity` positions each. */
export interface NativeKv {
  capacity: number;
  buffers: (Float32Array | Uint16Array)[];
  tensors: NativeTensor[];
}

interface CachePair {
  past: string;
  present: string;
  heads: number;
  headDim: number;
  type: "float32" | "float16";
}

export interface NativeDecoderOptions {
  threads: number;
  /** onnxruntime session config entries (spinning). */
  config: Record<string, string>;
  /** The context window: no cache grows past it. */
  maxLength: number;
}

/** True when the ONNX graph file names the operator (read in chunks; the op type is a plain string in it). */
export async function graphHasOp(file: string, opType: string): Promise<boolean> {
  const needle = Buffer.from(opType);
  using f = await Deno.open(file);
  const chunk = new Uint8Array(8 << 20);
  let carry = Buffer.alloc(0);
  for (;;) {
    const n = await f.read(chunk);
    if (n === null) return false;
    const window = Buffer.concat([carry, chunk.subarray(0, n)]);
    if (window.indexOf(needle) >= 0) return true;
    carry = window.subarray(Math.max(0, window.length - needle.length + 1));
  }
}

export class NativeDecoder {
  readonly vocabSize: number;
  readonly #session: NativeSession;
  readonly #pairs: CachePair[];
  readonly #inputs: ReadonlySet<string>;
  readonly #logitsType: "float32" | "float16";
  readonly #ones: BigInt64Array;
  readonly #keep: NativeTensor | null;
  readonly #maxLength: number;

  private constructor(session: NativeSession, maxLength: number) {
    this.#session = session;
    this.#maxLength = maxLength;
    this.#inputs = new Set(session.inputs.map((i) => i.name));
    const logits = session.outputs.find((o) => o.name === "logits");
    const vocab = logits?.dims.at(-1) ?? -1;
    if (!logits || vocab <= 0 || (logits.type !== "float32" && logits.type !== "float16")) {
      throw new Error("the decoder's logits have no fixed vocabulary width");
    }
    this.vocabSize = vocab;
    this.#logitsType = logits.type;
    this.#pairs = [];
    for (const input of session.inputs) {
      if (FED.has(input.name)) continue;
      if (!input.name.startsWith("past_key_values.")) {
        throw new Error(`the decoder takes an input the native run doesn't feed (${input.name})`);
      }
      const present = "present" + input.name.slice("past_key_values".length);
      const [, heads, , headDim] = input.dims;
      if (
        !session.outputs.some((o) => o.name === present) || input.dims.length !== 4 || !(heads > 0) ||
        !(headDim > 0) || (input.type !== "float32" && input.type !== "float16")
      ) {
        throw new Error(
          `the decoder's cache input ${input.name} is not a [batch, heads, positions, size] tensor`,
        );
      }
      this.#pairs.push({ past: input.name, present, heads, headDim, type: input.type });
    }
    if (!this.#pairs.length) throw new Error("the decoder has no KV cache inputs");
    this.#ones = new BigInt64Array(maxLength + 1).fill(1n);
    this.#keep = this.#inputs.has("num_logits_to_keep") ? session.tensor(int64([1]), [], "int64") : null;
  }

  /**
   * A native decoder of `file`, checked with one run (a graph that can't append to its cache in place fails
   * it); throws why it can't be one.
   */
  static async open(file: string, opts: NativeDecoderOptions): Promise<NativeDecoder> {
    const ort = openOrt();
    if (!ort) throw new Error(`onnxruntime's C API is not available (${ortUnavailable()})`);
    const session = NativeSession.create(ort, file, { threads: opts.threads, config: opts.config });
    try {
      const decoder = new NativeDecoder(session, opts.maxLength);
      const { kv } = await decoder.run(null, 0, [0], 0, true);
      decoder.release(kv);
      return decoder;
    } catch (e) {
      await session.release();
      throw e;
    }
  }

  /** Bytes a cache holds. */
  bytes(kv: NativeKv): number {
    return kv.buffers.reduce((n, b) => n + b.byteLength, 0);
  }

  #alloc(positions: number): NativeKv {
    const capacity = Math.min(Math.ceil(positions / GRANULE) * GRANULE, Math.max(positions, this.#maxLength));
    const buffers: (Float32Array | Uint16Array)[] = [];
    const tensors: NativeTensor[] = [];
    for (const p of this.#pairs) {
      const size = p.heads * capacity * p.headDim;
      const data = p.type === "float16" ? new Uint16Array(size) : new Float32Array(size);
      buffers.push(data);
      tensors.push(this.#session.tensor(data, [1, p.heads, capacity, p.headDim], p.type));
    }
    return { capacity, buffers, tensors };
  }

  /** A cache of at least `positions` holding the first `length` positions of `from`. */
  #copy(from: NativeKv, length: number, positions: number): NativeKv {
    const to = this.#alloc(positions);
    this.#pairs.forEach((p, i) => {
      const src = from.buffers[i];
      const dst = to.buffers[i];
      const n = length * p.headDim;
      for (let h = 0; h < p.heads; h++) {
        dst.set(
          src.subarray(h * from.capacity * p.headDim, h * from.capacity * p.headDim + n),
          h * to.capacity * p.headDim,
        );
      }
    });
    return to;
  }

  /** A private copy of the first `length` positions of a (shared) cache. */
  clone(kv: NativeKv, length: number): NativeKv {
    return this.#copy(kv, length, length + 1);
  }

  /** Frees a cache's tensors (its buffers go with the last reference). */
  release(kv: NativeKv): void {
    for (const t of kv.tensors) t.release();
  }

  /**
   * Runs `ids` at positions past..past+n-1 (offset by `positionBase`) over `kv` (null: a new cache; it must
   * be the caller's alone: `exclusive`), appending to it in place. Returns the last position's logits and the
   * cache, which is a new one when it had to grow or wasn't exclusive (the caller lets go of the old one).
   * `into` (vocabSize floats): where float32 logits of a one-row run go, so a decode step allocates no 196 KB
   * array per token (at a 49152 vocabulary); the returned row is then `into` itself.
   */
  async run(
    kv: NativeKv | null,
    past: number,
    ids: number[],
    positionBase: number,
    exclusive: boolean,
    into?: Float32Array,
  ): Promise<{ row: Float32Array; kv: NativeKv }> {
    const n = ids.length;
    const need = past + n;
    if (need > this.#ones.length) throw new Error(`${need} positions exceed the context window`);
    let cache = kv;
    if (!cache) cache = this.#alloc(need);
    else if (!exclusive || cache.capacity < need) {
      cache = this.#copy(cache, past, cache.capacity < need ? Math.max(need, 2 * cache.capacity) : need);
    }
    const s = this.#session;
    const ownTensors: NativeTensor[] = [];
    const own = (t: NativeTensor) => (ownTensors.push(t), t);
    const inputs: [string, NativeTensor][] = [
      ["input_ids", own(s.tensor(int64(ids), [1, n], "int64"))],
      ["attention_mask", own(s.tensor(this.#ones.subarray(0, need), [1, need], "int64"))],
    ];
    if (this.#inputs.has("position_ids")) {
      const positions = ids.map((_, i) => past + i + positionBase);
      inputs.push(["position_ids", own(s.tensor(int64(positions), [1, n], "int64"))]);
    }
    if (this.#keep) inputs.push(["num_logits_to_keep", this.#keep]);
    const rows = this.#keep ? 1 : n;
    const logits = this.#logitsType === "float16"
      ? new Uint16Array(rows * this.vocabSize)
      : rows === 1 && into?.length === this.vocabSize
      ? into
      : new Float32Array(rows * this.vocabSize);
    const outputs: [string, NativeTensor][] = [
      ["logits", own(s.tensor(logits, [1, rows, this.vocabSize], this.#logitsType))],
    ];
    this.#pairs.forEach((p, i) => {
      inputs.push([p.past, cache.tensors[i]]);
      outputs.push([p.present, cache.tensors[i]]);
    });
    try {
      await s.run(inputs, outputs);
    } catch (e) {
      if (cache !== kv) this.release(cache);
      throw e;
    } finally {
      for (const t of ownTensors) t.release();
    }
    const start = (rows - 1) * this.vocabSize;
    const row = logits === into
      ? into
      : logits instanceof Float32Array
      ? logits.subarray(start)
      : Float32Array.from(logits.subarray(start), halfToFloat);
    return { row, kv: cache };
  }

  async dispose(): Promise<void> {
    this.#keep?.release();
    await this.#session.release();
  }
}

/** int64 tensor data backed off V8's heap (one-token inputs would otherwise be 8 bytes inside it). */
function int64(values: number[]): BigInt64Array {
  const out = new BigInt64Array(Math.max(values.length, OFF_HEAP_BYTES / 8));
  for (let i = 0; i < values.length; i++) out[i] = BigInt(values[i]);
  return out.subarray(0, values.length);
}

/** IEEE half (as its 16 bits) to a number. */
export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}
