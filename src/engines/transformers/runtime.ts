// Owns the per-thread choice of onnxruntime for transformers.js. transformers.js binds its ONNX runtime when
// its module is first evaluated (it reads globalThis[Symbol.for("onnxruntime")]), so the choice is made once
// per thread, before the first import. The server loads each model in its own worker (src/workers/), so each
// model gets the runtime of its own device:
//   - webgpu: Deno's own navigator.gpu with onnxruntime-web (its WebGPU build, wasm files read from the local
//     npm package, never from a CDN) handed over through that hook;
//   - cpu: onnxruntime-node (native, multi-threaded). A thread that already bound it (tests loading several
//     models on one thread) gives a later "webgpu" model onnxruntime-node's own WebGPU provider.
// `auto` takes WebGPU only when Deno finds a hardware adapter: a software adapter (llvmpipe) works but is far
// slower than the CPU backend, so it is used only when asked for explicitly.
import type { DevicePref } from "../types.ts";
import type { Logger } from "../../log.ts";

export type TransformersModule = typeof import("@huggingface/transformers");

export interface TransformersRuntime {
  tf: TransformersModule;
  /** Which runtime was bound: "webgpu" (Deno WebGPU + onnxruntime-web) or "cpu" (onnxruntime-node). */
  kind: "webgpu" | "cpu";
  /**
   * The `device` to hand to from_pretrained on this runtime. Under the hook transformers.js knows no device
   * names (it would reject "webgpu"), so the webgpu runtime passes "auto" and fills in the execution
   * providers itself when a session is created.
   */
  device: "cpu" | "auto";
  /** Human-readable adapter/backend description for logs. */
  backend: string;
  /** The adapter's description ("llvmpipe (LLVM 15.0.6, 256 bits)"), or "cpu". */
  adapter: string;
  /**
   * Session options for a model whose manifest device is `pref` on this runtime (execution providers,
   * threads, where outputs stay). `keepOnGpu`: outputs (the KV cache) stay on the GPU between runs.
   * `spin`: whether onnxruntime's CPU worker threads busy-wait for work instead of sleeping (see Spin).
   */
  sessionOptions(
    pref: DevicePref,
    threads: number,
    keepOnGpu?: boolean,
    spin?: Spin,
  ): Record<string, unknown>;
}

/**
 * onnxruntime's CPU worker threads between parallel sections:
 *  - "run" (the default): they busy-wait while a run is in progress and stop when it returns
 *    (session.force_spinning_stop). A decode step is hundreds of small kernels, and waking a sleeping thread for
 *    each costs more than the kernel: spinning within runs decoded the SmolLM2-135M shape 1.4-1.5x faster
 *    on 2 cores. Between runs (sampling, HTTP, other models) the threads sleep and leave the cores alone.
 *  - "always": onnxruntime's own default, spinning between runs too (a machine dedicated to one model);
 *  - "never": threads always sleep, the least CPU for the slowest runs.
 */
export type Spin = "run" | "always" | "never";

/**
 * The manifest's `options.ort_spinning`: absent (run), true / false (always / never) or one of the Spin names.
 * Anything else fails the model's load, naming the option, rather than being read as the default.
 */
export function spinOf(v: unknown): Spin {
  if (v === undefined || v === "run") return "run";
  if (v === true || v === "always") return "always";
  if (v === false || v === "never") return "never";
  throw new Error(
    `options.ort_spinning must be "run", "always" or "never" (or true / false), not ${JSON.stringify(v)}`,
  );
}

/** onnxruntime-node's session config entries (under `extra.session`) for a Spin. */
export function spinConfig(spin: Spin): Record<string, unknown> {
  return {
    intra_op: { allow_spinning: spin === "never" ? "0" : "1" },
    ...(spin === "run" ? { force_spinning_stop: "1" } : {}),
  };
}

/** The same as onnxruntime's flat session config entries (for sessions made through its C API). */
export function spinEntries(spin: Spin): Record<string, string> {
  return {
    "session.intra_op.allow_spinning": spin === "never" ? "0" : "1",
    ...(spin === "run" ? { "session.force_spinning_stop": "1" } : {}),
  };
}

let chosen: Promise<TransformersRuntime> | undefined;

async function findAdapter(): Promise<GPUAdapter | null> {
  try {
    return (await navigator.gpu?.requestAdapter({ powerPreference: "high-performance" })) ?? null;
  } catch {
    return null;
  }
}

type Ort = typeof import("onnxruntime-web/webgpu");
type OrtSession = Awaited<ReturnType<Ort["InferenceSession"]["create"]>>;

/**
 * onnxruntime-web as transformers.js should see it from Deno:
 *  - transformers.js runs in its Node mode (Deno exposes `process`), so it hands sessions a file path, which
 *    onnxruntime-web would try to fetch as a URL: the path (and its external data files) are read here;
 *  - sessions created without execution providers get the runtime's own;
 *  - onnxruntime-web's wasm core runs one session at a time, and transformers.js only serializes runs in
 *    browsers, so runs are chained here across all models of the process.
 */
function wrapOrt(ort: Ort, defaultProviders: string[]): Ort {
  let chain: Promise<unknown> = Promise.resolve();
  const serialize = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn);
    chain = next.catch(() => {});
    return next;
  };
  const Base = ort.InferenceSession;
  const create = async (src: unknown, options: Record<string, unknown> = {}): Promise<OrtSession> => {
    const opts = { ...options };
    if (!Array.isArray(opts.executionProviders) || opts.executionProviders.length === 0) {
      opts.executionProviders = defaultProviders;
    }
    let model = src;
    if (typeof src === "string" && !/^(https?|blob|data):/.test(src)) {
      model = await Deno.readFile(src);
      opts.externalData ??= await externalDataBeside(src);
    }
    const session = await serialize(() => Base.create(model as Uint8Array, opts as never));
    const run = session.run.bind(session);
    // deno-lint-ignore no-explicit-any
    (session as any).run = (...args: unknown[]) => serialize(() => (run as any)(...args));
    return session;
  };
  const InferenceSession = Object.assign(Object.create(Base), { create });
  return { ...ort, InferenceSession } as Ort;
}

/** `model.onnx_data`, `model.onnx_data_1`, ... beside a model file, as onnxruntime-web's externalData. */
async function externalDataBeside(path: string): Promise<{ path: string; data: Uint8Array }[] | undefined> {
  const slash = path.lastIndexOf("/");
  const dir = path.slice(0, slash + 1) || ".";
  const base = path.slice(slash + 1);
  const out: { path: string; data: Uint8Array }[] = [];
  for (let i = 0;; i++) {
    const name = i === 0 ? `${base}_data` : `${base}_data_${i}`;
    try {
      out.push({ path: name, data: await Deno.readFile(dir + name) });
    } catch {
      break;
    }
  }
  return out.length ? out : undefined;
}

async function bindWebGpu(adapter: GPUAdapter): Promise<void> {
  const ort = await import("onnxruntime-web/webgpu");
  // The WebGPU build's wasm core (asyncify variant) from the installed package: offline, no CDN.
  ort.env.wasm.wasmPaths = {
    mjs: import.meta.resolve("onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs"),
    wasm: import.meta.resolve("onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm"),
  };
  // Threads would need web workers the Node-mode wasm loader can't start in Deno; the GPU does the work.
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  // Use the very adapter that was judged, not whatever onnxruntime-web would request itself.
  try {
    (ort.env.webgpu as unknown as { adapter: GPUAdapter }).adapter = adapter;
  } catch {
    // Older builds only read the power preference; they find the same (only) adapter.
  }
  (globalThis as Record<symbol, unknown>)[Symbol.for("onnxruntime")] = wrapOrt(ort, ["webgpu"]);
}

async function choose(pref: DevicePref, log: Logger): Promise<TransformersRuntime> {
  let adapter: GPUAdapter | null = null;
  if (pref !== "cpu") {
    adapter = await findAdapter();
    if (pref === "webgpu" && !adapter) {
      throw new Error(
        "device webgpu was requested but Deno found no WebGPU adapter (install a Vulkan driver, e.g. Debian's " +
          "mesa-vulkan-drivers for the llvmpipe software adapter, or use --device=cpu)",
      );
    }
    if (pref === "auto" && adapter?.info.isFallbackAdapter) adapter = null;
  }
  if (adapter) await bindWebGpu(adapter);
  const tf = await import("@huggingface/transformers");
  // Deno exposes the browser Cache API, which transformers.js would prefer; model files belong in the
  // models folder (its file cache under cache_dir) instead. The wasm core is read from disk: no cache.
  tf.env.useBrowserCache = false;
  tf.env.useWasmCache = false;
  let rt: TransformersRuntime;
  if (adapter) {
    const name = adapter.info.description || adapter.info.vendor || "unknown adapter";
    rt = {
      tf,
      kind: "webgpu",
      device: "auto",
      adapter: name,
      backend: `webgpu (${name}${adapter.info.isFallbackAdapter ? ", software" : ""}) via onnxruntime-web`,
      sessionOptions: (p, _threads, keepOnGpu) =>
        p === "cpu" ? { executionProviders: ["wasm"] } : {
          executionProviders: ["webgpu"],
          ...(keepOnGpu ? { preferredOutputLocation: "gpu-buffer" } : {}),
        },
    };
  } else {
    rt = {
      tf,
      kind: "cpu",
      device: "cpu",
      adapter: "cpu",
      backend: "cpu via onnxruntime-node",
      sessionOptions: (p, threads, _keepOnGpu, spin = "run") =>
        p === "webgpu" ? { executionProviders: ["webgpu"] } : {
          executionProviders: ["cpu"],
          intraOpNumThreads: threads,
          interOpNumThreads: 1,
          extra: { session: spinConfig(spin) },
        },
    };
  }
  log.info("transformers runtime", { device: rt.kind, backend: rt.backend, requested: pref });
  return rt;
}

/** The transformers.js module bound to the runtime chosen by the first caller's preference. */
export function transformersRuntime(pref: DevicePref, log: Logger): Promise<TransformersRuntime> {
  chosen ??= choose(pref, log);
  return chosen;
}
