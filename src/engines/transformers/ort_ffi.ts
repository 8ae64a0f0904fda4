// Owns onnxruntime's C API through Deno.dlopen: the one FFI file of the ONNX backend. It opens native/ort_shim.c
// (built by native/ort.ts), which opens the very libonnxruntime that onnxruntime-node ships (and has already
// loaded: one library, one OrtEnv per process), and gives sessions whose inputs and outputs are tensors over
// memory this process owns. That is what onnxruntime-node's JS API can't do: it copies every output into a new
// ArrayBuffer, even a preallocated one, so a KV cache went through onnxruntime's concat and that copy on every
// token. Here a decoder's past and present are one buffer that GroupQueryAttention appends to in place, and
// outputs cost nothing to read.
//
// The shim takes buffers and 64-bit handles only (no pointer objects cross), so a path-scoped --allow-ffi that
// lists the shim's folder is enough: Deno refuses pointer reads and calls through function pointers under one.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** ONNXTensorElementDataType values of the element types this backend feeds and reads. */
const ELEMENT = { float32: 1, int32: 6, int64: 7, bool: 9, float16: 10 } as const;
export type ElementType = keyof typeof ELEMENT;
const ELEMENT_NAME = new Map<number, ElementType>(
  Object.entries(ELEMENT).map(([k, v]) => [v, k as ElementType]),
);

const B = "buffer" as const;
const SYMBOLS = {
  oshim_open: { parameters: [B, B, "i32"], result: "i32" },
  oshim_session: { parameters: [B, "i32", B, B, B, "i32"], result: "i32" },
  oshim_describe: { parameters: ["u64", B, "i32", B, "i32"], result: "i32" },
  oshim_tensor: { parameters: [B, "u64", B, "u64", "i32", B, B, "i32"], result: "i32" },
  oshim_release_value: { parameters: ["u64"], result: "void" },
  oshim_release_session: { parameters: ["u64"], result: "void" },
  // Off the calling thread: a prefill runs for seconds, and the worker keeps answering its messages meanwhile.
  oshim_run: { parameters: ["u64", B, B, "u64", B, B, "u64", B, "i32"], result: "i32", nonblocking: true },
} as const satisfies Deno.ForeignLibraryInterface;

type Shim = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/** An onnxruntime call that failed: its own message. */
export class OrtError extends Error {
  override name = "OrtError";
}

/** The opened C API. */
export interface Ort {
  shim: Shim;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const cstr = (s: string) => encoder.encode(s + "\0");

/**
 * V8 keeps typed arrays of up to 64 bytes inside its heap, where a collection may move them: memory that the
 * native side reads during a nonblocking run (names, value lists, tensor data, the error text) is made at
 * least this large.
 */
export const OFF_HEAP_BYTES = 128;

/** A buffer for an error message. */
const errorBuffer = () => new Uint8Array(1024);
/** The error text of the calls made on this thread (all but runs): each is read right after its call. */
const syncError = errorBuffer();

function text(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return decoder.decode(end < 0 ? bytes : bytes.subarray(0, end));
}

function check(rc: number, err: Uint8Array): void {
  if (rc !== 0) throw new OrtError(text(err) || "onnxruntime failed");
}

/** The shim: this checkout's build (native/ort.ts), else lib/ort beside a compiled binary. */
function shimPath(): string | null {
  const candidates = [
    fileURLToPath(new URL("../../../native/build/ort/libort_shim.so", import.meta.url)),
    join(dirname(Deno.execPath()), "lib", "ort", "libort_shim.so"),
  ];
  return candidates.find((f) => {
    try {
      return Deno.statSync(f).isFile;
    } catch {
      return false;
    }
  }) ?? null;
}

/** libonnxruntime beside onnxruntime-node's binding (bin/napi-v6/<platform>/<arch>/), or null. */
function libraryPath(): string | null {
  let pkg: string | null = null;
  // Beside this module, else as transformers.js (which imports onnxruntime-node) would find it.
  for (const from of [import.meta.url, import.meta.resolve("@huggingface/transformers")]) {
    try {
      pkg = dirname(createRequire(from).resolve("onnxruntime-node/package.json"));
      break;
    } catch {
      // next
    }
  }
  if (!pkg) return null;
  const dir = join(
    pkg,
    "bin",
    "napi-v6",
    Deno.build.os === "windows" ? "win32" : Deno.build.os,
    {
      x86_64: "x64",
      aarch64: "arm64",
    }[Deno.build.arch],
  );
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (/^(lib)?onnxruntime(\.so\.\d+|\.\d[\d.]*\.dylib|\.dll)$/.test(e.name)) return join(dir, e.name);
    }
  } catch {
    // no binding for this platform
  }
  return null;
}

let opened: Ort | null | undefined;
let openError = "";

/** The C API, opened once per thread; null (see `ortUnavailable`) where the shim, the library or FFI isn't there. */
export function openOrt(): Ort | null {
  if (opened !== undefined) return opened;
  opened = null;
  try {
    const shim = shimPath();
    if (!shim) throw new Error("native/build/ort/libort_shim.so is not built (deno run -A native/ort.ts)");
    const path = libraryPath();
    if (!path) throw new Error("onnxruntime-node's libonnxruntime was not found");
    const { symbols } = Deno.dlopen(shim, SYMBOLS);
    const err = errorBuffer();
    check(symbols.oshim_open(cstr(path), err, err.length), err);
    opened = { shim: symbols };
  } catch (e) {
    openError = (e as Error).message;
  }
  return opened;
}

/** Why `openOrt` gave null. */
export function ortUnavailable(): string {
  return openError;
}

export interface TensorInfo {
  name: string;
  type: ElementType | null;
  /** -1 for a symbolic dimension. */
  dims: number[];
}

type Data = Float32Array | Uint16Array | BigInt64Array | Int32Array | Uint8Array;

/** An array of handles, backed off V8's heap. */
function handles(values: bigint[]): BigUint64Array {
  const out = new BigUint64Array(Math.max(values.length, OFF_HEAP_BYTES / 8));
  out.set(values);
  return out;
}

/** A tensor over `data` (which it keeps alive); freed by `release`. */
export class NativeTensor {
  #handle: bigint | null;
  constructor(readonly data: Data, readonly dims: readonly number[], readonly ort: Ort, type: ElementType) {
    const out = new BigUint64Array(1);
    const err = syncError;
    check(
      ort.shim.oshim_tensor(
        data,
        BigInt(data.byteLength),
        BigInt64Array.from(dims, BigInt),
        BigInt(dims.length),
        ELEMENT[type],
        out,
        err,
        err.length,
      ),
      err,
    );
    this.#handle = out[0];
  }

  get handle(): bigint {
    if (this.#handle === null) throw new OrtError("tensor used after release");
    return this.#handle;
  }

  release(): void {
    if (this.#handle !== null) this.ort.shim.oshim_release_value(this.#handle), this.#handle = null;
  }
}

export interface NativeSessionOptions {
  threads: number;
  /** session config entries (e.g. spinning) as onnxruntime names them. */
  config: Record<string, string>;
}

/** An inference session run with bound inputs and outputs (every output preallocated by the caller). */
export class NativeSession {
  readonly inputs: TensorInfo[];
  readonly outputs: TensorInfo[];
  #handle: bigint | null;
  #running: Promise<unknown> = Promise.resolve();
  /** The error text of a run (read after it returns; runs never overlap). */
  readonly #runError = errorBuffer();

  private constructor(readonly ort: Ort, handle: bigint) {
    this.#handle = handle;
    const [inputs, outputs] = this.#describe();
    this.inputs = inputs;
    this.outputs = outputs;
  }

  static create(ort: Ort, path: string, opts: NativeSessionOptions): NativeSession {
    const config = Object.entries(opts.config).map(([k, v]) => `${k}\0${v}\0`).join("") + "\0";
    const out = new BigUint64Array(1);
    const err = errorBuffer();
    check(ort.shim.oshim_session(cstr(path), opts.threads, cstr(config), out, err, err.length), err);
    try {
      return new NativeSession(ort, out[0]);
    } catch (e) {
      ort.shim.oshim_release_session(out[0]);
      throw e;
    }
  }

  #describe(): [TensorInfo[], TensorInfo[]] {
    const out = new Uint8Array(1 << 20);
    const err = errorBuffer();
    check(this.ort.shim.oshim_describe(this.#handle!, out, out.length, err, err.length), err);
    const lists: [TensorInfo[], TensorInfo[]] = [[], []];
    for (const line of text(out).split("\n")) {
      if (!line) continue;
      const [kind, name, elem, dims] = line.split("\t");
      lists[kind === "O" ? 1 : 0].push({
        name,
        type: ELEMENT_NAME.get(Number(elem)) ?? null,
        dims: dims ? dims.split(",").map(Number) : [],
      });
    }
    return lists;
  }

  tensor(data: Data, dims: readonly number[], type: ElementType): NativeTensor {
    return new NativeTensor(data, dims, this.ort, type);
  }

  /**
   * One run writing into the caller's output tensors. Runs of one session never overlap (each waits for the
   * one before), and the tensors (and their buffers) stay referenced until it returns.
   */
  run(inputs: [string, NativeTensor][], outputs: [string, NativeTensor][]): Promise<void> {
    const go = async () => {
      if (this.#handle === null) throw new OrtError("session used after release");
      const inNames = this.#names(inputs);
      const outNames = this.#names(outputs);
      const inValues = handles(inputs.map(([, t]) => t.handle));
      const outValues = handles(outputs.map(([, t]) => t.handle));
      const err = this.#runError;
      const rc = await this.ort.shim.oshim_run(
        this.#handle,
        inNames,
        inValues,
        BigInt(inputs.length),
        outNames,
        outValues,
        BigInt(outputs.length),
        err,
        err.length,
      );
      // Keep every buffer the native side read reachable until here.
      void [inNames, outNames, inValues, outValues, inputs, outputs];
      check(rc, err);
    };
    const run = this.#running.then(go);
    this.#running = run.catch(() => {});
    return run;
  }

  /** NUL-separated name lists: a decoder passes the same few every token, so each is encoded once. */
  readonly #nameLists = new Map<string, Uint8Array>();

  #names(list: [string, NativeTensor][]): Uint8Array {
    const key = list.map(([n]) => n).join("\0");
    let bytes = this.#nameLists.get(key);
    if (!bytes) {
      // Large enough to live off V8's heap: it must not move during a run.
      bytes = new Uint8Array(Math.max(OFF_HEAP_BYTES, encoder.encode(key).length + 1));
      encoder.encodeInto(key + "\0", bytes);
      this.#nameLists.set(key, bytes);
    }
    return bytes;
  }

  async release(): Promise<void> {
    await this.#running;
    if (this.#handle !== null) this.ort.shim.oshim_release_session(this.#handle), this.#handle = null;
  }
}
