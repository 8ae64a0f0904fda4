// Owns the onnxruntime C API through Deno.dlopen: the one FFI file of the ONNX backend. It opens the very
// libonnxruntime that onnxruntime-node ships (and has already loaded: one library, one OrtEnv per process) and
// gives sessions whose inputs and outputs are tensors over memory this process owns. That is what
// onnxruntime-node's JS API can't do: it copies every output into a new ArrayBuffer, even a preallocated one,
// so a KV cache went through onnxruntime's concat and that copy on every token. Here a decoder's past and
// present are one buffer that GroupQueryAttention appends to in place, and outputs cost nothing to read.
//
// The C API is a table of function pointers (OrtApi) whose order never changes between releases (new
// functions are appended); the indices below are their positions in onnxruntime_c_api.h's `struct OrtApi`.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** Positions in OrtApi (onnxruntime_c_api.h), all present since API version 5. */
const API = {
  GetErrorMessage: 2,
  CreateEnv: 3,
  CreateSession: 7,
  Run: 9,
  CreateSessionOptions: 10,
  SetIntraOpNumThreads: 24,
  SetInterOpNumThreads: 25,
  SessionGetInputCount: 30,
  SessionGetOutputCount: 31,
  SessionGetInputTypeInfo: 33,
  SessionGetOutputTypeInfo: 34,
  SessionGetInputName: 36,
  SessionGetOutputName: 37,
  CreateTensorWithDataAsOrtValue: 49,
  CastTypeInfoToTensorInfo: 55,
  GetTensorElementType: 60,
  GetDimensionsCount: 61,
  GetDimensions: 62,
  CreateCpuMemoryInfo: 69,
  AllocatorFree: 76,
  GetAllocatorWithDefaultOptions: 78,
  ReleaseStatus: 93,
  ReleaseSession: 95,
  ReleaseValue: 96,
  ReleaseTypeInfo: 98,
  ReleaseSessionOptions: 100,
  AddSessionConfigEntry: 130,
} as const;
const API_VERSION = 16;

/** ONNXTensorElementDataType values of the element types this backend feeds and reads. */
const ELEMENT = { float32: 1, int32: 6, int64: 7, bool: 9, float16: 10 } as const;
export type ElementType = keyof typeof ELEMENT;
const ELEMENT_NAME = new Map<number, ElementType>(
  Object.entries(ELEMENT).map(([k, v]) => [v, k as ElementType]),
);

const P = "pointer" as const;
const B = "buffer" as const;
const SIGNATURES = {
  GetErrorMessage: { parameters: [P], result: P },
  CreateEnv: { parameters: ["i32", B, B], result: P },
  CreateSession: { parameters: [P, B, P, B], result: P },
  // Off the calling thread: a prefill runs for seconds, and the worker keeps answering its messages meanwhile.
  Run: { parameters: [P, P, B, B, "usize", B, "usize", B], result: P, nonblocking: true },
  CreateSessionOptions: { parameters: [B], result: P },
  SetIntraOpNumThreads: { parameters: [P, "i32"], result: P },
  SetInterOpNumThreads: { parameters: [P, "i32"], result: P },
  SessionGetInputCount: { parameters: [P, B], result: P },
  SessionGetOutputCount: { parameters: [P, B], result: P },
  SessionGetInputTypeInfo: { parameters: [P, "usize", B], result: P },
  SessionGetOutputTypeInfo: { parameters: [P, "usize", B], result: P },
  SessionGetInputName: { parameters: [P, "usize", P, B], result: P },
  SessionGetOutputName: { parameters: [P, "usize", P, B], result: P },
  CreateTensorWithDataAsOrtValue: { parameters: [P, B, "usize", B, "usize", "i32", B], result: P },
  CastTypeInfoToTensorInfo: { parameters: [P, B], result: P },
  GetTensorElementType: { parameters: [P, B], result: P },
  GetDimensionsCount: { parameters: [P, B], result: P },
  GetDimensions: { parameters: [P, B, "usize"], result: P },
  CreateCpuMemoryInfo: { parameters: ["i32", "i32", B], result: P },
  AllocatorFree: { parameters: [P, P], result: P },
  GetAllocatorWithDefaultOptions: { parameters: [B], result: P },
  ReleaseStatus: { parameters: [P], result: "void" },
  ReleaseSession: { parameters: [P], result: "void" },
  ReleaseValue: { parameters: [P], result: "void" },
  ReleaseTypeInfo: { parameters: [P], result: "void" },
  ReleaseSessionOptions: { parameters: [P], result: "void" },
  AddSessionConfigEntry: { parameters: [P, B, B], result: P },
} as const satisfies Record<keyof typeof API, Deno.ForeignFunction>;

type Fns = { [K in keyof typeof SIGNATURES]: Deno.UnsafeFnPointer<(typeof SIGNATURES)[K]> };

/** An onnxruntime call that failed: its own message. */
export class OrtError extends Error {
  override name = "OrtError";
}

interface Ort {
  fn: Fns;
  env: Deno.PointerObject;
  /** CPU memory info for tensors over this process's buffers. */
  cpu: Deno.PointerObject;
  allocator: Deno.PointerObject;
}

const encoder = new TextEncoder();
const cstr = (s: string) => encoder.encode(s + "\0");

/** One pointer-sized out-parameter. */
function slot(): BigUint64Array {
  return new BigUint64Array(1);
}

function pointerIn(s: BigUint64Array): Deno.PointerObject {
  const p = Deno.UnsafePointer.create(s[0]);
  if (!p) throw new OrtError("onnxruntime returned a null pointer");
  return p;
}

function check(ort: Pick<Ort, "fn">, status: Deno.PointerValue): void {
  if (status === null) return;
  const msg = Deno.UnsafePointerView.getCString(ort.fn.GetErrorMessage.call(status)!);
  ort.fn.ReleaseStatus.call(status);
  throw new OrtError(msg);
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

/** The C API, opened once per thread; null (see `ortUnavailable`) where the library or FFI isn't there. */
export function openOrt(): Ort | null {
  if (opened !== undefined) return opened;
  opened = null;
  try {
    const path = libraryPath();
    if (!path) throw new Error("onnxruntime-node's libonnxruntime was not found");
    const lib = Deno.dlopen(path, { OrtGetApiBase: { parameters: [], result: P } });
    const base = lib.symbols.OrtGetApiBase();
    if (!base) throw new Error("OrtGetApiBase returned null");
    const getApi = new Deno.UnsafeFnPointer(new Deno.UnsafePointerView(base).getPointer(0)!, {
      parameters: ["u32"],
      result: P,
    });
    const api = getApi.call(API_VERSION);
    if (!api) throw new Error(`this onnxruntime has no C API version ${API_VERSION}`);
    const table = new Deno.UnsafePointerView(api);
    const fn = Object.fromEntries(
      Object.entries(API).map(([name, i]) => [
        name,
        new Deno.UnsafeFnPointer(table.getPointer(i * 8)!, SIGNATURES[name as keyof typeof API]),
      ]),
    ) as unknown as Fns;
    const out = slot();
    // One environment per process: onnxruntime hands back the one onnxruntime-node already made.
    check({ fn }, fn.CreateEnv.call(3, cstr("oai"), out));
    const env = pointerIn(out);
    check({ fn }, fn.CreateCpuMemoryInfo.call(0, 0, out));
    const cpu = pointerIn(out);
    check({ fn }, fn.GetAllocatorWithDefaultOptions.call(out));
    opened = { fn, env, cpu, allocator: pointerIn(out) };
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

/**
 * V8 keeps typed arrays of up to 64 bytes inside its heap, where a collection may move them: memory that the
 * native side reads during a nonblocking run (names, value lists, tensor data) is made at least this large.
 */
export const OFF_HEAP_BYTES = 128;

/** An array of pointer values, backed off V8's heap. */
function pointers(values: bigint[]): BigUint64Array {
  const out = new BigUint64Array(Math.max(values.length, OFF_HEAP_BYTES / 8));
  out.set(values);
  return out;
}

/** A tensor over `data` (which it keeps alive); freed by `release`. */
export class NativeTensor {
  #ptr: Deno.PointerObject | null;
  constructor(readonly data: Data, readonly dims: readonly number[], ort: Ort, type: ElementType) {
    const out = slot();
    check(
      ort,
      ort.fn.CreateTensorWithDataAsOrtValue.call(
        ort.cpu,
        data,
        BigInt(data.byteLength),
        BigInt64Array.from(dims, BigInt),
        BigInt(dims.length),
        ELEMENT[type],
        out,
      ),
    );
    this.#ptr = pointerIn(out);
    this.#release = () => ort.fn.ReleaseValue.call(this.#ptr);
  }
  readonly #release: () => void;

  get ptr(): bigint {
    if (!this.#ptr) throw new OrtError("tensor used after release");
    return BigInt(Deno.UnsafePointer.value(this.#ptr));
  }

  release(): void {
    if (this.#ptr) this.#release(), this.#ptr = null;
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
  #ptr: Deno.PointerObject | null;
  #running: Promise<unknown> = Promise.resolve();

  private constructor(readonly ort: Ort, ptr: Deno.PointerObject) {
    this.#ptr = ptr;
    this.inputs = this.#infos("Input");
    this.outputs = this.#infos("Output");
  }

  static create(ort: Ort, path: string, opts: NativeSessionOptions): NativeSession {
    const { fn } = ort;
    const out = slot();
    check(ort, fn.CreateSessionOptions.call(out));
    const so = pointerIn(out);
    try {
      check(ort, fn.SetIntraOpNumThreads.call(so, opts.threads));
      check(ort, fn.SetInterOpNumThreads.call(so, 1));
      for (const [k, v] of Object.entries(opts.config)) {
        check(ort, fn.AddSessionConfigEntry.call(so, cstr(k), cstr(v)));
      }
      check(ort, fn.CreateSession.call(ort.env, cstr(path), so, out));
    } finally {
      fn.ReleaseSessionOptions.call(so);
    }
    const session = new NativeSession(ort, pointerIn(out));
    return session;
  }

  #infos(kind: "Input" | "Output"): TensorInfo[] {
    const { fn, allocator } = this.ort;
    const count = new BigUint64Array(1);
    check(this.ort, fn[`SessionGet${kind}Count`].call(this.#ptr, count));
    const infos: TensorInfo[] = [];
    for (let i = 0; i < Number(count[0]); i++) {
      const out = slot();
      check(this.ort, fn[`SessionGet${kind}Name`].call(this.#ptr, BigInt(i), allocator, out));
      const namePtr = pointerIn(out);
      const name = Deno.UnsafePointerView.getCString(namePtr);
      check(this.ort, fn.AllocatorFree.call(allocator, namePtr));
      check(this.ort, fn[`SessionGet${kind}TypeInfo`].call(this.#ptr, BigInt(i), out));
      const typeInfo = pointerIn(out);
      try {
        const tensorOut = slot();
        check(this.ort, fn.CastTypeInfoToTensorInfo.call(typeInfo, tensorOut));
        const tensor = Deno.UnsafePointer.create(tensorOut[0]);
        if (!tensor) {
          infos.push({ name, type: null, dims: [] });
          continue;
        }
        const elem = new Int32Array(1);
        check(this.ort, fn.GetTensorElementType.call(tensor, elem));
        const n = new BigUint64Array(1);
        check(this.ort, fn.GetDimensionsCount.call(tensor, n));
        const dims = new BigInt64Array(Math.max(1, Number(n[0])));
        check(this.ort, fn.GetDimensions.call(tensor, dims, n[0]));
        infos.push({
          name,
          type: ELEMENT_NAME.get(elem[0]) ?? null,
          dims: Array.from(dims.subarray(0, Number(n[0])), Number),
        });
      } finally {
        fn.ReleaseTypeInfo.call(typeInfo);
      }
    }
    return infos;
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
      if (!this.#ptr) throw new OrtError("session used after release");
      const inNames = this.#names(inputs);
      const outNames = this.#names(outputs);
      const inValues = pointers(inputs.map(([, t]) => t.ptr));
      const outValues = pointers(outputs.map(([, t]) => t.ptr));
      const status = await this.ort.fn.Run.call(
        this.#ptr,
        null,
        inNames.ptrs,
        inValues,
        BigInt(inputs.length),
        outNames.ptrs,
        BigInt(outputs.length),
        outValues,
      );
      // Keep every buffer the native side read reachable until here.
      void [inNames.bytes, outNames.bytes, inValues, outValues, inputs, outputs];
      check(this.ort, status);
    };
    const run = this.#running.then(go);
    this.#running = run.catch(() => {});
    return run;
  }

  /** Name tables of the lists a run passes: a decoder passes the same few every token, so each is made once. */
  readonly #nameTables = new Map<string, { bytes: Uint8Array; ptrs: BigUint64Array }>();

  #names(list: [string, NativeTensor][]): { bytes: Uint8Array; ptrs: BigUint64Array } {
    const key = list.map(([n]) => n).join("\0");
    let table = this.#nameTables.get(key);
    if (!table) {
      // One buffer for all the strings, large enough to live off V8's heap (it must not move during a run).
      const bytes = new Uint8Array(Math.max(OFF_HEAP_BYTES, encoder.encode(key).length + 1));
      encoder.encodeInto(key + "\0", bytes);
      const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(bytes)));
      const starts: bigint[] = [];
      let at = 0;
      for (const [n] of list) starts.push(base + BigInt(at)), at += encoder.encode(n).length + 1;
      table = { bytes, ptrs: pointers(starts) };
      this.#nameTables.set(key, table);
    }
    return table;
  }

  async release(): Promise<void> {
    await this.#running;
    if (this.#ptr) this.ort.fn.ReleaseSession.call(this.#ptr), this.#ptr = null;
  }
}
