import assert from "node:assert/strict";
import { memoryLogger } from "../../log.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import { gpuLayersOf, layersThatFit } from "./placement.ts";

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
