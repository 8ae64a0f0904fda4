// Owns the transformer building blocks shared by the encoder and decoder graphs, written with standard
// opset-17 ops only (no contrib ops) so the same graphs run on onnxruntime-node CPU and onnxruntime-web WebGPU.
import type { GraphBuilder } from "./onnx_builder.ts";

/** Most negative float32: what HF exports add for masked attention positions (never NaN, unlike -inf rows). */
export const MASK_MIN = -3.4028234663852886e38;

/** x @ W (+ b). W is [in, out] like every MatMul weight we write. */
export function linear(b: GraphBuilder, x: string, w: string, bias?: string, name = "linear"): string {
  const y = b.op("MatMul", [x, w], {}, { name });
  return bias ? b.op("Add", [y, bias], {}, { name: `${name}_bias` }) : y;
}

export function layerNorm(b: GraphBuilder, x: string, gamma: string, beta: string, eps: number): string {
  return b.op("LayerNormalization", [x, gamma, beta], { axis: -1, epsilon: { f: eps } });
}

/** RMSNorm spelled out the way optimum exports Llama/Qwen2 (opset 17 has no RMSNormalization op). */
export function rmsNorm(b: GraphBuilder, x: string, weight: string, eps: number): string {
  const sq = b.op("Pow", [x, b.cf32([2], [])]);
  const mean = b.op("ReduceMean", [sq], { axes: [-1], keepdims: 1 });
  const std = b.op("Sqrt", [b.op("Add", [mean, b.cf32([eps], [])])]);
  return b.op("Mul", [b.op("Div", [x, std]), weight]);
}

/** Exact (erf) GELU as BERT uses it; opset 17 has no Gelu op. */
export function gelu(b: GraphBuilder, x: string): string {
  const e = b.op("Erf", [b.op("Div", [x, b.cf32([Math.SQRT2], [])])]);
  return b.op("Mul", [b.op("Mul", [x, b.cf32([0.5], [])]), b.op("Add", [e, b.cf32([1], [])])]);
}

export function silu(b: GraphBuilder, x: string): string {
  return b.op("Mul", [x, b.op("Sigmoid", [x])]);
}

/** Scalar int64 size of dimension `axis` of `x`. */
export function dimOf(b: GraphBuilder, x: string, axis: number): string {
  return b.op("Gather", [b.op("Shape", [x]), b.ci64([axis], [])], { axis: 0 });
}

/** [B, S, heads*hd] -> [B, heads, S, hd]. */
export function splitHeads(b: GraphBuilder, x: string, heads: number, headDim: number): string {
  const r = b.op("Reshape", [x, b.ci64([0, 0, heads, headDim])]);
  return b.op("Transpose", [r], { perm: [0, 2, 1, 3] });
}

/** [B, heads, S, hd] -> [B, S, heads*hd]. */
export function mergeHeads(b: GraphBuilder, x: string, heads: number, headDim: number): string {
  const t = b.op("Transpose", [x], { perm: [0, 2, 1, 3] });
  return b.op("Reshape", [t, b.ci64([0, 0, heads * headDim])]);
}
