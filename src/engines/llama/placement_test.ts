import assert from "node:assert/strict";
import { memoryLogger } from "../../log.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import { gpuLayersOf, layersThatFit, runAheadPays } from "./placement.ts";

const MiB = 2 ** 20;

Deno.test("placement: all layers when the file and a margin fit in free GPU memory, else the share that does", () => {
  assert.equal(layersThatFit(1000 * MiB, 25, 8000 * MiB), -1);
  // 1100 MiB needed for the weights, 612 MiB free past the margin: about half of the 25 layers.
  assert.equal(layersThatFit(1000 * MiB, 25, 1124 * MiB), 13);
  assert.equal(layersThatFit(1000 * MiB, 25, 100 * MiB), 0);
  assert.equal(layersThatFit(1000 * MiB, 0, 100 * MiB), -1, "layers unknown: llama.cpp's own default");
});

Deno.test("placement: options.gpu_layers wins over --gpu-layers; a bad value names the option", () => {
  const entry = (options: Record<string, unknown>) => ({ id: "m", options } as unknown as ModelEntry);
  const ctx = { gpuLayers: 7, log: memoryLogger() } as unknown as LoadContext;
  assert.equal(gpuLayersOf(entry({}), ctx), 7);
  assert.equal(gpuLayersOf(entry({ gpu_layers: 0 }), ctx), 0);
  assert.equal(gpuLayersOf(entry({}), { ...ctx, gpuLayers: undefined }), -1);
  assert.throws(
    () => gpuLayersOf(entry({ gpu_layers: "all" }), ctx),
    /options\.gpu_layers must be an integer/,
  );
});

Deno.test("placement: a lone stream runs ahead only where the decode leaves a core free", () => {
  const cpu = { device: "CPU", gpuLayers: 0, layers: 31, gpuBytes: 0 };
  assert.equal(runAheadPays(2, 2, cpu), false, "two threads on two cores");
  assert.equal(runAheadPays(8, 4, cpu), false);
  assert.equal(runAheadPays(1, 2, cpu), true, "a core to spare");
  const gpu = { device: "GPU", gpuLayers: 31, layers: 31, gpuBytes: 1 };
  assert.equal(runAheadPays(2, 2, gpu), true, "every layer on the GPU");
  assert.equal(runAheadPays(2, 2, { ...gpu, gpuLayers: 20 }), false, "a share of the layers on the CPU");
  assert.equal(runAheadPays(2, 2, { ...cpu, layers: 0 }), false, "layers unknown (a build with no GPU)");
});
