// Owns where a GGUF model's layers go: how many the user asked for on the GPU (--gpu-layers, the entry's
// options.gpu_layers, device: cpu), how many fit when "all that fit" was asked, and the report of where they
// went (the device names ggml gives, layers offloaded, GPU memory) that the backend label, /v1/models,
// /metrics and the GPU memory budget show.
import type { LoadContext, ModelEntry, Placement } from "../types.ts";
import { type Device, listDevices, type LlamaContext, LlamaLoadError, type LlamaModel } from "./ffi.ts";

/** The layers asked for: the entry's options.gpu_layers, else the server's --gpu-layers (-1: all that fit). */
export function gpuLayersOf(entry: ModelEntry, ctx: LoadContext): number {
  const v = entry.options.gpu_layers ?? ctx.gpuLayers ?? -1;
  if (typeof v !== "number" || !Number.isInteger(v) || v < -1) {
    throw new LlamaLoadError(
      `model \`${entry.id}\`: options.gpu_layers must be an integer >= -1 (-1: all that fit)`,
    );
  }
  return v;
}

/**
 * How many of a model's `layers` fit in `free` bytes of GPU memory, for "all that fit" (-1): all when the
 * file (weights) and a margin for the KV cache and compute buffers fit, else the share of repeating layers
 * the free memory holds (llama.cpp itself would put all of them there and fail to allocate).
 */
export function layersThatFit(fileBytes: number, layers: number, free: number): number {
  if (layers <= 0 || free <= 0) return -1;
  const need = fileBytes * 1.1 + 512 * 2 ** 20;
  if (need <= free) return -1;
  return Math.max(0, Math.floor(layers * (free - 512 * 2 ** 20) / (fileBytes * 1.1)));
}

/** The GPUs of the loaded build (none for the CPU build). */
export function gpus(devices: Device[]): Device[] {
  return devices.filter((d) => d.type === "gpu" || d.type === "igpu");
}

/** Where the model and its context ended up: the GPUs its layers went to (or the CPU) and their GPU memory. */
export function placementOf(model: LlamaModel, ctx: LlamaContext): Placement {
  const offloaded = model.offload?.layers ?? 0;
  const devices = offloaded > 0 ? gpus(listDevices(model.sym)) : [];
  return {
    device: devices.length ? devices.map((d) => `${d.name} (${d.description})`).join(", ") : "CPU",
    gpuLayers: offloaded,
    layers: model.offload?.of ?? 0,
    gpuBytes: model.deviceBytes + ctx.deviceBytes,
  };
}

/**
 * Whether a lone stream should run ahead in C (LlamaChat.runAhead): its tokens are then taken, worked into
 * text and sent by the runner's JavaScript while the next ones decode, which pays only where the decode leaves
 * a core for that (fewer compute threads than cores, or every layer on a GPU). Where its threads take every
 * core the JavaScript preempts one of them mid-graph, and the stream decoded slower than with the pipeline
 * drawing between two decodes (SmolLM2-135M shape, 2 threads on 2 cores, ours against ours, both start orders,
 * 16 rounds: Q4_0 1.03-1.06x, Q8_0 1.01-1.02x faster without it; with 1 thread on 2 cores the run ahead made
 * it 1.04-1.05x faster).
 */
export function runAheadPays(threads: number, cores: number, placement: Placement): boolean {
  const allOnGpu = placement.layers > 0 && placement.gpuLayers >= placement.layers;
  return allOnGpu || threads < cores;
}

/** The cores this process may use (what Deno reports; 1 if it reports none). */
export function coreCount(): number {
  return navigator.hardwareConcurrency || 1;
}
