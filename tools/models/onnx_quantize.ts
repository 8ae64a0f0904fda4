// Owns weight MatMuls in the three precisions transformers.js picks by dtype: fp32 (`model.onnx`), q8
// (`model_quantized.onnx`: DynamicQuantizeLinear + MatMulInteger with per-column int8 weights, as
// onnxruntime's quantize_dynamic writes them) and q4 (`model_q4.onnx`: com.microsoft MatMulNBits, 4-bit blocks of
// 32 with uint8 zero points, as onnx-community ships them).
import { DataType, type GraphBuilder, MS_DOMAIN } from "./onnx_builder.ts";

export type WeightFormat = "fp32" | "q8" | "q4";

/** transformers.js file name for each format (dtype fp32 / q8 / q4). */
export const ONNX_FILE: Record<WeightFormat, string> = {
  fp32: "model.onnx",
  q8: "model_quantized.onnx",
  q4: "model_q4.onnx",
};

export const Q4_BLOCK_SIZE = 32;

/** x @ W where W is [inDim, outDim] row-major, written in the requested precision. */
export function weightMatMul(
  b: GraphBuilder,
  x: string,
  w: Float32Array,
  inDim: number,
  outDim: number,
  name: string,
  format: WeightFormat,
): string {
  if (format === "fp32") return b.op("MatMul", [x, b.init(name, w, [inDim, outDim])], {}, { name });
  if (format === "q8") return matMulInteger(b, x, w, inDim, outDim, name);
  return matMulNBits(b, x, w, inDim, outDim, name, 4, Q4_BLOCK_SIZE);
}

/** Symmetric per-output-column int8 weights; activations quantized per tensor at run time. */
function matMulInteger(
  b: GraphBuilder,
  x: string,
  w: Float32Array,
  K: number,
  N: number,
  name: string,
): string {
  const scales = new Float32Array(N);
  for (let k = 0; k < K; k++) {
    for (let n = 0; n < N; n++) scales[n] = Math.max(scales[n], Math.abs(w[k * N + n]));
  }
  for (let n = 0; n < N; n++) scales[n] = scales[n] > 0 ? scales[n] / 127 : 1;
  const q = new Int8Array(K * N);
  for (let k = 0; k < K; k++) {
    for (let n = 0; n < N; n++) q[k * N + n] = Math.round(w[k * N + n] / scales[n]);
  }
  const [xq, xScale, xZero] = b.opN("DynamicQuantizeLinear", [x], {}, { outputs: 3, name: `${name}_quant` });
  const wq = b.init(`${name}_quantized`, q, [K, N]);
  const wZero = b.init(`${name}_zero_point`, new Int8Array(N), [N]);
  const acc = b.op("MatMulInteger", [xq, wq, xZero, wZero], {}, { name: `${name}_MatMulInteger` });
  const scale = b.op("Mul", [xScale, b.init(`${name}_scale`, scales, [N])]);
  return b.op("Mul", [b.op("Cast", [acc], { to: DataType.FLOAT }), scale], {}, { name });
}

/**
 * MatMulNBits: B is [N, k_blocks, blob] (transposed, each column of W cut into blocks along K), values
 * q = round(w / scale) + zero_point, dequantized as (q - zero_point) * scale; 4-bit values pack two per byte,
 * low nibble first, and so do the 4-bit zero points (per column, padded to whole bytes).
 */
export function matMulNBits(
  b: GraphBuilder,
  x: string,
  w: Float32Array,
  K: number,
  N: number,
  name: string,
  bits: 4 | 8,
  blockSize: number,
): string {
  const kBlocks = Math.ceil(K / blockSize);
  const blob = (blockSize * bits) / 8;
  const maxQ = (1 << bits) - 1;
  const packed = new Uint8Array(N * kBlocks * blob);
  const scales = new Float32Array(N * kBlocks);
  const zpBytesPerCol = Math.ceil((kBlocks * bits) / 8);
  const zeros = new Uint8Array(N * zpBytesPerCol);
  for (let n = 0; n < N; n++) {
    for (let kb = 0; kb < kBlocks; kb++) {
      // Asymmetric range that always contains 0, so exact zeros (most of a crafted weight) stay exact.
      let lo = 0;
      let hi = 0;
      for (let i = 0; i < blockSize; i++) {
        const k = kb * blockSize + i;
        if (k < K) lo = Math.min(lo, w[k * N + n]), hi = Math.max(hi, w[k * N + n]);
      }
      const scale = hi > lo ? (hi - lo) / maxQ : 1;
      const zp = Math.min(maxQ, Math.max(0, Math.round(-lo / scale)));
      scales[n * kBlocks + kb] = scale;
      if (bits === 4) zeros[n * zpBytesPerCol + (kb >> 1)] |= zp << ((kb & 1) * 4);
      else zeros[n * zpBytesPerCol + kb] = zp;
      for (let i = 0; i < blockSize; i++) {
        const k = kb * blockSize + i;
        const v = k < K ? Math.min(maxQ, Math.max(0, Math.round(w[k * N + n] / scale) + zp)) : zp;
        const base = (n * kBlocks + kb) * blob;
        if (bits === 4) packed[base + (i >> 1)] |= v << ((i & 1) * 4);
        else packed[base + i] = v;
      }
    }
  }
  const inputs = [
    x,
    b.init(`${name}_Q${bits}`, packed, [N, kBlocks, blob]),
    b.init(`${name}_scales`, scales, [N * kBlocks]),
    b.init(`${name}_zero_points`, zeros, [N * zpBytesPerCol]),
  ];
  return b.op("MatMulNBits", inputs, { K, N, bits, block_size: blockSize, accuracy_level: 4 }, {
    domain: MS_DOMAIN,
    name,
  });
}
