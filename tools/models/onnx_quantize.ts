// Owns weight MatMuls in the precisions transformers.js picks by dtype: fp32 (`model.onnx`), q8 and int8
// (`model_quantized.onnx`, `model_int8.onnx`: DynamicQuantizeLinear + MatMulInteger with per-column int8
// weights, as onnxruntime's quantize_dynamic writes them), q4 (`model_q4.onnx`: com.microsoft MatMulNBits, 4-bit
// blocks of 32 with uint8 zero points, as onnx-community ships them) and bnb4 (`model_bnb4.onnx`:
// com.microsoft MatMulBnb4, NF4 codes in blocks of 64 with one absmax each, as MatMulBnb4Quantizer writes them).
// fp16 and q4f16 are the fp32 and q4 graphs through onnx_float16.ts.
import { DataType, type GraphBuilder, MS_DOMAIN } from "./onnx_builder.ts";

export type WeightFormat = "fp32" | "q8" | "int8" | "q4" | "bnb4";

/** transformers.js file name for each format (dtype fp32 / q8 / int8 / q4 / bnb4). */
export const ONNX_FILE: Record<WeightFormat, string> = {
  fp32: "model.onnx",
  q8: "model_quantized.onnx",
  int8: "model_int8.onnx",
  q4: "model_q4.onnx",
  bnb4: "model_bnb4.onnx",
};

export const Q4_BLOCK_SIZE = 32;

/**
 * x @ W where W is [inDim, outDim] row-major, written in the requested precision. `q8: "nbits"` writes 8-bit
 * MatMulNBits instead of MatMulInteger, as onnxruntime-genai's model builder does for int8.
 */
export function weightMatMul(
  b: GraphBuilder,
  x: string,
  w: Float32Array,
  inDim: number,
  outDim: number,
  name: string,
  format: WeightFormat,
  opts: { q8?: "integer" | "nbits" } = {},
): string {
  if (format === "fp32") return b.op("MatMul", [x, b.init(name, w, [inDim, outDim])], {}, { name });
  if (format === "q8" && opts.q8 === "nbits") {
    return matMulNBits(b, x, w, inDim, outDim, name, 8, Q4_BLOCK_SIZE);
  }
  if (format === "q8" || format === "int8") return matMulInteger(b, x, w, inDim, outDim, name);
  if (format === "bnb4") return matMulBnb4(b, x, w, inDim, outDim, name, BNB4_BLOCK_SIZE);
  return matMulNBits(b, x, w, inDim, outDim, name, 4, Q4_BLOCK_SIZE);
}

export const BNB4_BLOCK_SIZE = 64;

/** bitsandbytes' NF4 code book (quant_type 1): normal-distribution quantiles scaled to [-1, 1], 0 exact. */
const NF4 = [
  -1.0,
  -0.6961928009986877,
  -0.5250730514526367,
  -0.39491748809814453,
  -0.28444138169288635,
  -0.18477343022823334,
  -0.09105003625154495,
  0.0,
  0.07958029955625534,
  0.16093020141124725,
  0.24611230194568634,
  0.33791524171829224,
  0.44070982933044434,
  0.5626170039176941,
  0.7229568362236023,
  1.0,
];

/**
 * MatMulBnb4 (transB): W transposed to [N, K] and flattened, cut into blocks of `blockSize` values, each
 * stored as the nearest NF4 code of value / absmax (two per byte, the first in the high nibble).
 */
function matMulBnb4(
  b: GraphBuilder,
  x: string,
  w: Float32Array,
  K: number,
  N: number,
  name: string,
  blockSize: number,
): string {
  const numel = N * K;
  const blocks = Math.ceil(numel / blockSize);
  const absmax = new Float32Array(blocks);
  const at = (i: number) => w[(i % K) * N + Math.floor(i / K)]; // element i of W^T flattened
  for (let i = 0; i < numel; i++) {
    const blk = Math.floor(i / blockSize);
    absmax[blk] = Math.max(absmax[blk], Math.abs(at(i)));
  }
  const packed = new Uint8Array(Math.ceil(numel / 2));
  for (let i = 0; i < numel; i++) {
    const scale = absmax[Math.floor(i / blockSize)];
    const v = scale > 0 ? at(i) / scale : 0;
    let code = 0;
    for (let c = 1; c < 16; c++) if (Math.abs(NF4[c] - v) < Math.abs(NF4[code] - v)) code = c;
    packed[i >> 1] |= (i & 1) ? code : code << 4;
  }
  const inputs = [
    x,
    b.init(`${name}_bnb4`, packed, [packed.length]),
    b.init(`${name}_absmax`, absmax, [blocks]),
  ];
  return b.op("MatMulBnb4", inputs, { K, N, block_size: blockSize, quant_type: 1 }, {
    domain: MS_DOMAIN,
    name,
  });
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
