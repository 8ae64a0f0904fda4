// Owns the native boundary to llama.cpp: finding libllama_shim (native/llama.ts puts it beside the prebuilt
// libllama and ggml's per-CPU variants), its one Deno.dlopen per process, the symbol table, and typed
// wrappers that hide pointers and buffers. Calls are synchronous: they run on the model's worker thread,
// never on the thread that serves HTTP; one, a lone stream's run ahead, runs on a thread of Deno's own.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { onHugePages } from "./huge_pages.ts";

const SYMBOLS = {
  lshim_init: { parameters: ["buffer", "i32"], result: "void" },
  lshim_devices: { parameters: ["buffer", "i32"], result: "i32" },
  lshim_model_load: { parameters: ["buffer", "i32", "i32", "i32", "buffer"], result: "pointer" },
  // Optional: a --llama-lib shim built before these existed still loads (and nothing goes on huge pages).
  lshim_huge_pages: { parameters: [], result: "i32", optional: true },
  lshim_huge_begin: { parameters: [], result: "void", optional: true },
  lshim_huge_end: { parameters: ["f64"], result: "void", optional: true },
  lshim_context: {
    parameters: [
      "pointer",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "buffer",
      "buffer",
    ],
    result: "pointer",
  },
  lshim_context_free: { parameters: ["pointer", "u64", "i32"], result: "void" },
  lshim_model_free: { parameters: ["pointer", "i32"], result: "void" },
  lshim_state_get: { parameters: ["pointer", "i32", "buffer", "u64", "i32"], result: "u64" },
  lshim_state_set: { parameters: ["pointer", "i32", "buffer", "u64", "i32"], result: "u64" },
  lshim_model_info: { parameters: ["pointer", "buffer"], result: "void" },
  lshim_token_flags: { parameters: ["pointer", "buffer", "i32"], result: "void" },
  lshim_token_pieces: { parameters: ["pointer", "i32", "buffer", "i64", "buffer", "i32"], result: "i64" },
  lshim_tokenize: { parameters: ["pointer", "buffer", "i32", "buffer", "i32", "i32", "i32"], result: "i32" },
  lshim_decode: {
    parameters: ["pointer", "buffer", "buffer", "buffer", "buffer", "i32", "buffer", "i32", "i32"],
    result: "i32",
  },
  lshim_embed: { parameters: ["pointer", "buffer", "buffer", "i32", "buffer", "i32", "i32"], result: "i32" },
  lshim_sample: { parameters: ["buffer", "i32", "f64", "i32", "f64", "buffer"], result: "i32" },
  lshim_run_ahead: {
    parameters: [
      "pointer",
      "i32",
      "i32",
      "i32",
      "i32",
      "f64",
      "i32",
      "f64",
      "buffer",
      "buffer",
      "i32",
      "i32",
      "i32",
      "buffer",
      "buffer",
      "buffer",
      "i32",
    ],
    result: "i32",
    // Runs on Deno's blocking pool: the model's thread reads its tokens as they come (see LlamaContext.runAhead).
    nonblocking: true,
  },
  lshim_seq_rm: { parameters: ["pointer", "i32", "i32", "i32", "i32"], result: "i32" },
  lshim_seq_cp: { parameters: ["pointer", "i32", "i32", "i32", "i32", "i32"], result: "void" },
  lshim_chat_template: { parameters: ["pointer", "buffer", "i32"], result: "i32" },
  lshim_bench: { parameters: ["pointer", "i32", "i32", "buffer"], result: "i32" },
  llama_model_meta_val_str: { parameters: ["pointer", "buffer", "buffer", "usize"], result: "i32" },
  llama_pooling_type: { parameters: ["pointer"], result: "i32" },
  llama_model_is_recurrent: { parameters: ["pointer"], result: "bool" },
  llama_model_is_hybrid: { parameters: ["pointer"], result: "bool" },
  llama_state_seq_get_size: { parameters: ["pointer", "i32"], result: "usize" },
  llama_free: { parameters: ["pointer"], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;

type Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/** The library is not set up (a clear message; the registry turns it into 503 for llama.cpp models only). */
export class LlamaLibraryMissing extends Error {
  override name = "LlamaLibraryMissing";
}

/** A GGUF file llama.cpp refused (corrupt, or an architecture it does not know). */
export class LlamaLoadError extends Error {
  override name = "LlamaLoadError";
}

const defaultDir = () => fileURLToPath(new URL("../../../native/build/llama/lib/", import.meta.url));
const LOG_LEVELS: Record<string, number> = { debug: 1, info: 2, warn: 3, error: 4, none: 5 };

let opened: { path: string; sym: Symbols } | undefined;

/** The shim of `configured` (a folder or the file), else this checkout's build, else lib/ beside the binary. */
export function openLlama(configured?: string): Symbols {
  const candidates = configured
    ? [configured]
    : [defaultDir(), join(dirname(Deno.execPath()), "lib", "llama")];
  const files = candidates.map((c) => c.endsWith(".so") ? c : join(c, "libllama_shim.so"));
  const path = files.find((f) => {
    try {
      return Deno.statSync(f).isFile;
    } catch {
      return false;
    }
  });
  if (!path) {
    throw new LlamaLibraryMissing(
      `llama.cpp is not set up (looked for ${files[0]}): run \`deno task native:llama\` ` +
        "(or `deno run -A native/llama.ts --if-missing`), or point --llama-lib at the folder holding it",
    );
  }
  if (opened) {
    if (opened.path !== path) throw new Error(`llama.cpp is already loaded from ${opened.path}`);
    return opened.sym;
  }
  const sym = Deno.dlopen(path, SYMBOLS).symbols;
  const level = LOG_LEVELS[(Deno.env.get("OAI_LLAMA_LOG") ?? "error").toLowerCase()] ?? 4;
  sym.lshim_init(cstr(dirname(path)), level);
  opened = { path, sym };
  return sym;
}

/** A device ggml found (the CPU, and each GPU of a GPU build). */
export interface Device {
  type: "cpu" | "gpu" | "igpu" | "accel";
  /** ggml's name: "CPU", "Vulkan0", "CUDA0", "Metal". */
  name: string;
  /** What the driver calls it: "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)". */
  description: string;
  freeBytes: number;
  totalBytes: number;
}

const DEVICE_TYPES = ["cpu", "gpu", "igpu", "accel"] as const;

/** The devices of the loaded build, as ggml enumerates them (GPUs are the ones llama.cpp offloads to). */
export function listDevices(sym: Symbols): Device[] {
  let buf = new Uint8Array(4096);
  let n = sym.lshim_devices(buf, buf.length);
  if (n >= buf.length) n = sym.lshim_devices(buf = new Uint8Array(n + 1), n + 1);
  return decoder.decode(buf.subarray(0, n)).split("\n").filter(Boolean).map((line) => {
    const [type, name, description, free, total] = line.split("\t");
    return {
      type: DEVICE_TYPES[Number(type)] ?? "accel",
      name,
      description,
      freeBytes: Number(free),
      totalBytes: Number(total),
    };
  });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function cstr(s: string): Uint8Array<ArrayBuffer> {
  const b = encoder.encode(s);
  const out = new Uint8Array(b.length + 1);
  out.set(b);
  return out;
}

export interface ModelInfo {
  nVocab: number;
  nCtxTrain: number;
  nEmbd: number;
  bos: number;
  eos: number;
  /** llama_vocab_type: 1 SPM, 2 BPE, 3 WPM, 4 UGM, 5 RWKV. */
  vocabType: number;
  addBos: boolean;
  addEos: boolean;
}

/** Where a model's layers went, as llama.cpp reported it while loading. */
export interface Offload {
  /** Layers in GPU memory (llama.cpp counts the output layer as one). */
  layers: number;
  /** Layers in all. */
  of: number;
}

/** One loaded GGUF model and its vocabulary, with contexts made from it. */
export class LlamaModel {
  readonly info: ModelInfo;
  /** What llama.cpp allocated for the weights (the mapped file, repacked copies, GPU buffers), as it reports them. */
  readonly bytes: number;
  /** The part of `bytes` in GPU memory. */
  readonly deviceBytes: number;
  /** Layers offloaded to the GPU, when llama.cpp said (a build with no GPU backend says nothing). */
  readonly offload: Offload | undefined;
  /** Whether the model has a GPU device: its calls take the process's GPU lock (native/llama_shim.c). */
  readonly gpu: boolean;
  /**
   * Whether its memory is a recurrent state (Mamba, RWKV) in whole or part (hybrids: Jamba, Granite 4, LFM2,
   * Qwen3-Next): tokens can be added to it but not cut from its end.
   */
  readonly recurrent: boolean;
  /** Whether the weights are mapped from the file (else read into the process's memory). */
  readonly mapped: boolean;
  /** Whether its memory (and its contexts') is advised to huge pages. */
  readonly huge: boolean;
  #ptr: Deno.PointerValue;

  /**
   * `gpuLayers` < 0: every layer on the GPU when there is one (llama.cpp's default); `cpuOnly`: no GPU device
   * at all, so a GPU build serves this model from host memory and the CPU; `mmap`: map the file (else read
   * it into memory of the process's own); `huge`: advise the memory its load and its contexts allocate to
   * huge pages (see huge_pages.ts).
   */
  constructor(
    readonly sym: Symbols,
    path: string,
    opts: { gpuLayers: number; cpuOnly: boolean; mmap: boolean; huge?: boolean },
  ) {
    const out = new Float64Array(4);
    this.gpu = !opts.cpuOnly;
    this.mapped = opts.mmap;
    this.huge = opts.huge ?? false;
    this.#ptr = onHugePages(
      sym,
      this.huge,
      () => sym.lshim_model_load(cstr(path), opts.gpuLayers, opts.mmap ? 1 : 0, opts.cpuOnly ? 1 : 0, out),
    );
    if (!this.#ptr) throw new LlamaLoadError("llama.cpp could not load the GGUF file");
    this.bytes = Math.round(out[0]);
    this.deviceBytes = Math.round(out[1]);
    this.offload = out[3] >= 0 ? { layers: out[2], of: out[3] } : undefined;
    this.recurrent = sym.llama_model_is_recurrent(this.#ptr) || sym.llama_model_is_hybrid(this.#ptr);
    const i = new Int32Array(9);
    sym.lshim_model_info(this.#ptr, i);
    this.info = {
      nVocab: i[0],
      nCtxTrain: i[1],
      nEmbd: i[2],
      bos: i[3],
      eos: i[4],
      vocabType: i[5],
      addBos: i[6] !== 0,
      addEos: i[7] !== 0,
    };
  }

  get ptr(): Deno.PointerValue {
    return this.#ptr;
  }

  /** A metadata value as text (numbers too), or undefined when the key is absent. */
  meta(key: string): string | undefined {
    let buf = new Uint8Array(256);
    let n = this.sym.llama_model_meta_val_str(this.#ptr, cstr(key), buf, BigInt(buf.length));
    if (n < 0) return undefined;
    if (n >= buf.length) {
      buf = new Uint8Array(n + 1);
      n = this.sym.llama_model_meta_val_str(this.#ptr, cstr(key), buf, BigInt(buf.length));
    }
    return decoder.decode(buf.subarray(0, n));
  }

  chatTemplate(): string | null {
    let buf = new Uint8Array(1 << 16);
    let n = this.sym.lshim_chat_template(this.#ptr, buf, buf.length);
    if (n < 0) return null;
    if (n >= buf.length) {
      buf = new Uint8Array(n + 1);
      n = this.sym.lshim_chat_template(this.#ptr, buf, buf.length);
    }
    return decoder.decode(buf.subarray(0, n));
  }

  /** Per token: [is end-of-generation, llama_token_attr bits]. */
  tokenFlags(): Int32Array {
    const out = new Int32Array(this.info.nVocab);
    this.sym.lshim_token_flags(this.#ptr, out, out.length);
    return out;
  }

  /** Every token's bytes (special tokens as their text when `special`). */
  tokenPieces(special: boolean): Uint8Array[] {
    const n = this.info.nVocab;
    const offsets = new BigInt64Array(n + 1);
    let buf = new Uint8Array(n * 8);
    const need = Number(
      this.sym.lshim_token_pieces(this.#ptr, special ? 1 : 0, buf, BigInt(buf.length), offsets, n),
    );
    if (need > buf.length) {
      buf = new Uint8Array(need);
      this.sym.lshim_token_pieces(this.#ptr, special ? 1 : 0, buf, BigInt(buf.length), offsets, n);
    }
    return Array.from({ length: n }, (_, t) => buf.slice(Number(offsets[t]), Number(offsets[t + 1])));
  }

  tokenize(text: string, opts: { addSpecial: boolean; parseSpecial: boolean }): number[] {
    const bytes = encoder.encode(text);
    const run = (out: Int32Array) =>
      this.sym.lshim_tokenize(
        this.#ptr,
        bytes,
        bytes.length,
        out,
        out.length,
        opts.addSpecial ? 1 : 0,
        opts.parseSpecial ? 1 : 0,
      );
    let out = new Int32Array(bytes.length + 8);
    let n = run(out);
    // A negative count is the room needed.
    if (n < 0) n = run(out = new Int32Array(-n));
    return Array.from(out.subarray(0, n));
  }

  free(): void {
    if (this.#ptr) this.sym.lshim_model_free(this.#ptr, this.gpu ? 1 : 0);
    this.#ptr = null;
  }
}

export interface ContextOptions {
  nCtx: number;
  /** Tokens one llama_decode call takes (llama.cpp computes them in micro-batches of uBatch). */
  nBatch: number;
  /** Tokens of one micro-batch (n_ubatch; default nBatch). */
  uBatch?: number;
  nSeqMax: number;
  threads: number;
  embeddings: boolean;
  /** llama_pooling_type; -1 keeps the model's. */
  pooling: number;
  /** Nothing of this context on a GPU (see LlamaModel's cpuOnly). */
  cpuOnly?: boolean;
  /**
   * One KV cache for all sequences (the default), or, false, a KV stream per sequence of nCtx / nSeqMax cells:
   * then a sequence's cells can only be copied whole to another (`seqCp` of 0..-1).
   */
  unified?: boolean;
}

/** One llama_context: the KV cache of up to nSeqMax sequences, and a batch decode into JS buffers. */
export class LlamaContext {
  #ptr: Deno.PointerValue;
  /** ggml's thread pool for this context (0: ggml starts threads per graph). */
  #threadpool: bigint;
  readonly pooling: number;
  /** What llama.cpp allocated for the context: the KV cache (all cells, up front), compute and output buffers. */
  readonly bytes: number;
  /** The part of `bytes` in GPU memory. */
  readonly deviceBytes: number;
  /** 1 when this context computes on a GPU (its calls take the process's GPU lock), else 0. */
  readonly #gpu: number;

  constructor(readonly model: LlamaModel, readonly opts: ContextOptions) {
    this.#gpu = opts.cpuOnly ? 0 : 1;
    const s = model.sym;
    const bytes = new Float64Array(2);
    const threadpool = new BigUint64Array(1);
    this.#ptr = onHugePages(s, model.huge, () =>
      s.lshim_context(
        model.ptr,
        opts.nCtx,
        opts.nBatch,
        opts.uBatch ?? opts.nBatch,
        opts.nSeqMax,
        opts.threads,
        opts.embeddings ? 1 : 0,
        opts.pooling,
        opts.cpuOnly ? 1 : 0,
        opts.unified === false ? 0 : 1,
        bytes,
        threadpool,
      ));
    this.#threadpool = threadpool[0];
    if (!this.#ptr) throw new LlamaLoadError("llama.cpp could not create a context for the model");
    this.bytes = Math.round(bytes[0]);
    this.deviceBytes = Math.round(bytes[1]);
    this.pooling = s.llama_pooling_type(this.#ptr);
  }

  /**
   * Decodes one batch; an entry whose `output` is k > 0 gets its logits in row k - 1 of `logits`. Status 1
   * means the KV cache had no room.
   */
  decode(
    tokens: Int32Array,
    pos: Int32Array,
    seq: Int32Array,
    output: Int32Array,
    logits: Float32Array | null,
  ): number {
    return this.model.sym.lshim_decode(
      this.#ptr,
      tokens,
      pos,
      seq,
      output,
      tokens.length,
      logits,
      this.model.info.nVocab,
      this.#gpu,
    );
  }

  /**
   * One sequence's generation in C (lshim_run_ahead) off this thread: decodes `token` at `pos`, then draws and
   * decodes until run.tokens.length draws, a drawn end-of-generation token (when `stopOnEos`), a failed decode, or
   * run.ctl[0] set by this thread, drawing from the Rng state run.rng. Draws land in run.tokens / run.states as
   * run.ctl[1] counts them. Resolves with the llama_decode calls made. Nothing else may use this context, nor
   * `eos` and `run` change or go, until it resolves.
   */
  runAhead(
    seq: number,
    token: number,
    pos: number,
    sampling: { temperature: number; topK: number; topP: number },
    eos: Int32Array,
    masked: number,
    stopOnEos: boolean,
    run: { rng: Uint32Array; ctl: Int32Array; tokens: Int32Array; states: Uint32Array },
  ): Promise<number> {
    return this.model.sym.lshim_run_ahead(
      this.#ptr,
      seq,
      token,
      pos,
      run.tokens.length,
      sampling.temperature,
      sampling.topK,
      sampling.topP,
      run.rng,
      eos,
      eos.length,
      masked,
      stopOnEos ? 1 : 0,
      run.ctl,
      run.tokens,
      run.states,
      this.#gpu,
    );
  }

  /** Pooled vectors of several inputs in one batch. */
  embed(inputs: readonly (readonly number[])[], dims: number): Float32Array[] | number {
    const lens = Int32Array.from(inputs.map((r) => r.length));
    const tokens = Int32Array.from(inputs.flat());
    const out = new Float32Array(inputs.length * dims);
    const rc = this.model.sym.lshim_embed(this.#ptr, tokens, lens, inputs.length, out, dims, this.#gpu);
    if (rc !== 0) return rc;
    return inputs.map((_, i) => out.slice(i * dims, (i + 1) * dims));
  }

  /**
   * libllama's own decode loop, for the benchmark's baseline: an n-token prompt, then `gen` single-token
   * decodes (greedy in C). Returns milliseconds for each part.
   */
  benchDecode(prompt: number, gen: number): { promptMs: number; genMs: number } {
    const ns = new BigInt64Array(2);
    const rc = this.model.sym.lshim_bench(this.#ptr, prompt, gen, ns);
    if (rc !== 0) throw new Error(`llama_decode failed (${rc})`);
    return { promptMs: Number(ns[0]) / 1e6, genMs: Number(ns[1]) / 1e6 };
  }

  /** Drops positions [p0, p1) of a sequence (-1: open end). */
  /** Whether the cells went: a recurrent model's state cannot lose a partial range (a whole sequence always can). */
  seqRm(seq: number, p0: number, p1: number): boolean {
    return this.model.sym.lshim_seq_rm(this.#ptr, seq, p0, p1, this.#gpu) !== 0;
  }

  /** A copy of one sequence's KV cells (llama_state_seq_get_data), to restore later with `restoreSeq`. */
  saveSeq(seq: number): Uint8Array {
    const s = this.model.sym;
    const size = Number(s.llama_state_seq_get_size(this.#ptr, seq));
    const data = new Uint8Array(size);
    const wrote = Number(s.lshim_state_get(this.#ptr, seq, data, BigInt(size), this.#gpu));
    if (wrote !== size) throw new Error(`llama_state_seq_get_data wrote ${wrote} of ${size} bytes`);
    return data;
  }

  /** Puts saved cells back as sequence `seq` (which must be empty); false when the cache has no room. */
  restoreSeq(seq: number, data: Uint8Array): boolean {
    return Number(this.model.sym.lshim_state_set(this.#ptr, seq, data, BigInt(data.length), this.#gpu)) > 0;
  }

  /** Shares positions [p0, p1) of `src` with `dst` (no copy in a unified cache). */
  seqCp(src: number, dst: number, p0: number, p1: number): void {
    this.model.sym.lshim_seq_cp(this.#ptr, src, dst, p0, p1, this.#gpu);
  }

  free(): void {
    if (this.#ptr) this.model.sym.lshim_context_free(this.#ptr, this.#threadpool, this.#gpu);
    this.#ptr = null;
  }
}
