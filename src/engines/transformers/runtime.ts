// Owns the process-wide choice of onnxruntime for transformers.js. transformers.js binds its ONNX runtime
// when its module is first evaluated (it reads globalThis[Symbol.for("onnxruntime")]), so the choice is made
// once, before the first import, for every transformers model in the process:
//   - webgpu: Deno's own navigator.gpu with onnxruntime-web handed over through that hook;
//   - cpu: onnxruntime-node (native, multi-threaded).
import type { DevicePref, Logger } from "../types.ts";

export type TransformersModule = typeof import("@huggingface/transformers");

export interface TransformersRuntime {
  tf: TransformersModule;
  /** The device to pass to from_pretrained: "webgpu" or "cpu". */
  device: "webgpu" | "cpu";
  /** Human-readable adapter/backend description for logs. */
  backend: string;
}

let chosen: Promise<TransformersRuntime> | undefined;

async function findAdapter(): Promise<GPUAdapter | null> {
  try {
    return (await navigator.gpu?.requestAdapter()) ?? null;
  } catch {
    return null;
  }
}

async function choose(pref: DevicePref, log: Logger): Promise<TransformersRuntime> {
  let useWebGpu = false;
  let adapterName = "";
  if (pref !== "cpu") {
    const adapter = await findAdapter();
    adapterName = adapter?.info.description || adapter?.info.vendor || "";
    // A software adapter (llvmpipe) works but is ~100x slower than the CPU backend: only on explicit request.
    useWebGpu = adapter !== null && (pref === "webgpu" || !adapter.info.isFallbackAdapter);
    if (pref === "webgpu" && !adapter) {
      throw new Error("device webgpu was requested but no WebGPU adapter was found");
    }
  }
  if (useWebGpu) {
    const ort = await import("onnxruntime-web/webgpu");
    (globalThis as Record<symbol, unknown>)[Symbol.for("onnxruntime")] = ort;
  }
  const tf = await import("@huggingface/transformers");
  const rt: TransformersRuntime = useWebGpu
    ? { tf, device: "webgpu", backend: `webgpu (${adapterName}) via onnxruntime-web` }
    : { tf, device: "cpu", backend: "cpu via onnxruntime-node" };
  log.info("transformers runtime", { device: rt.device, backend: rt.backend, requested: pref });
  return rt;
}

/** The transformers.js module bound to the runtime chosen by the first caller's preference. */
export function transformersRuntime(pref: DevicePref, log: Logger): Promise<TransformersRuntime> {
  chosen ??= choose(pref, log);
  return chosen;
}
