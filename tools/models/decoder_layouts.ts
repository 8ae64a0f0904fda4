// Owns which ONNX files a decoder is written as: the layouts real repos ship, each a combination of attention
// (decomposed ops as optimum exports them, or the fused com.microsoft operators of onnxruntime-genai's model
// builder), a dtype (transformers.js's file suffix), optional inputs (num_logits_to_keep, a merged decoder's
// use_cache_branch) and whether the weights sit in an external `.onnx_data` file.
import { join } from "node:path";
import { DTYPE_SUFFIX } from "../../src/hub/dtypes.ts";
import { buildDecoder, type DecoderShape, type DecoderWeights, type LayoutOptions } from "./decoder_graph.ts";
import { buildFusedDecoder } from "./decoder_fused.ts";
import { MS_DOMAIN } from "./onnx_builder.ts";
import { convertToFloat16 } from "./onnx_float16.ts";
import type { WeightFormat } from "./onnx_quantize.ts";

export type DecoderDtype = "fp32" | "fp16" | "q8" | "int8" | "q4" | "q4f16" | "bnb4";

export interface DecoderLayout extends LayoutOptions {
  dtype: DecoderDtype;
  /** "fused": GroupQueryAttention, RotaryEmbedding, (Skip)SimplifiedLayerNormalization, MatMulNBits. */
  attention?: "decomposed" | "fused";
  /** Fused only: packed QKV (rotary inside GroupQueryAttention) and gate/up, as the model builder's CPU form. */
  packed?: boolean;
  /** Weights in `<file>_data` beside the graph, as repos split large exports. */
  external?: boolean;
  /** The file's base name: "model" (default) or "decoder_model_merged". */
  fileName?: string;
}

/** The weight format a dtype is built from before any float16 conversion. */
function baseFormat(dtype: DecoderDtype): WeightFormat {
  return dtype === "fp16" ? "fp32" : dtype === "q4f16" ? "q4" : dtype;
}

/** onnx/<fileName><suffix>.onnx for a layout. */
export function layoutFile(layout: DecoderLayout): string {
  return `${layout.fileName ?? "model"}${DTYPE_SUFFIX[layout.dtype]}.onnx`;
}

/** Writes one layout of a decoder into `<dir>/onnx/`. */
export async function writeDecoderLayout(
  dir: string,
  shape: DecoderShape,
  weights: DecoderWeights,
  layout: DecoderLayout,
  maxPositions: number,
): Promise<void> {
  const format = baseFormat(layout.dtype);
  const fused = layout.attention === "fused";
  if (fused && (format === "int8" || format === "bnb4")) {
    throw new Error(`the fused layout has no ${layout.dtype} form`);
  }
  const graph = fused
    ? buildFusedDecoder(shape, weights, format, { ...layout, maxPositions })
    : buildDecoder(shape, weights, format, layout);
  if (layout.dtype === "fp16" || layout.dtype === "q4f16") convertToFloat16(graph);
  const msDomain = fused || format === "q4" || format === "bnb4";
  await Deno.mkdir(join(dir, "onnx"), { recursive: true });
  await graph.save(join(dir, "onnx"), layoutFile(layout), {
    extraOpsets: msDomain ? { [MS_DOMAIN]: 1 } : {},
    forceExternal: layout.external,
  });
}
