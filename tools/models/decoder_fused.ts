// Owns the fused-operator decoder layout that onnxruntime-genai's model builder writes and onnx-community's
// `-ONNX-GQA` repos ship: SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization for RMSNorm and the
// residual adds, com.microsoft RotaryEmbedding on q and k, GroupQueryAttention over the KV cache (sequence
// lengths from the attention mask, so one kernel does masking, GQA broadcast and the cache append), and
// MatMulNBits weights (4- or 8-bit) or plain MatMul. The input contract is the one transformers.js drives:
// input_ids, attention_mask, position_ids, past_key_values.N.key/value -> logits, present.N.key/value.
// `packed` is the form the model builder writes for the CPU: q, k and v in one MatMulNBits whose output goes to
// GroupQueryAttention as packed QKV with the rotary embedding done inside it (do_rotary), and gate and up in one
// MatMulNBits split in two: 7 weight kernels per layer become 4, and 2 RotaryEmbedding kernels go.
import { DataType, type GraphBuilder, MS_DOMAIN } from "./onnx_builder.ts";
import { dimOf } from "./onnx_layers.ts";
import { type WeightFormat, weightMatMul } from "./onnx_quantize.ts";
import {
  type DecoderShape,
  type DecoderWeights,
  type LayoutOptions,
  logitsToKeep,
  newDecoderGraph,
  transpose,
} from "./decoder_graph.ts";

/** Weight MatMuls of the fused layout: fp32 MatMul, 8-bit or 4-bit MatMulNBits (as the model builder writes). */
function fusedMatMul(
  b: GraphBuilder,
  x: string,
  w: Float32Array,
  dims: [number, number],
  name: string,
  format: WeightFormat,
): string {
  return weightMatMul(b, x, w, dims[0], dims[1], name, format, { q8: "nbits" });
}

/** cos/sin caches [maxPositions, hd/2] for RotaryEmbedding (non-interleaved, HF rotate_half pairs). */
function rotaryCaches(b: GraphBuilder, s: DecoderShape, maxPositions: number): [string, string] {
  const half = s.headDim / 2;
  const cos = new Float32Array(maxPositions * half);
  const sin = new Float32Array(maxPositions * half);
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      // Same float32 rounding of the frequency as the decomposed graph (inv_freq is an f32 initializer there).
      const angle = Math.fround(p * Math.fround(1 / Math.pow(s.ropeTheta, (2 * i) / s.headDim)));
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return [b.init("cos_cache", cos, [maxPositions, half]), b.init("sin_cache", sin, [maxPositions, half])];
}

/** [K, a] and [K, b] ... row-major weights side by side: [K, a + b + ...], each output column unchanged. */
function concatColumns(k: number, parts: Float32Array[]): Float32Array {
  const widths = parts.map((p) => p.length / k);
  const n = widths.reduce((x, y) => x + y, 0);
  const out = new Float32Array(k * n);
  for (let r = 0; r < k; r++) {
    let at = r * n;
    parts.forEach((p, i) => {
      out.set(p.subarray(r * widths[i], (r + 1) * widths[i]), at);
      at += widths[i];
    });
  }
  return out;
}

export interface FusedOptions {
  maxPositions: number;
  /** Packed QKV with rotary inside GroupQueryAttention, and gate/up in one weight MatMul. */
  packed?: boolean;
}

export function buildFusedDecoder(
  s: DecoderShape,
  w: DecoderWeights,
  format: WeightFormat,
  opts: LayoutOptions & FusedOptions,
): GraphBuilder {
  const { b, inputIds, mask, positionIds, past } = newDecoderGraph(s, opts);
  const { hiddenSize: D, numHeads: nh, numKvHeads: kvh, headDim: hd } = s;
  const ms = { domain: MS_DOMAIN };

  // GroupQueryAttention reads the lengths from the mask: seqlens_k = valid tokens - 1 per row, and the total.
  const seqlensK = b.op("Cast", [
    b.op("Sub", [b.op("ReduceSum", [mask, b.ci64([1])], { keepdims: 0 }), b.ci64([1], [])]),
  ], { to: DataType.INT32 });
  const totalLen = b.op("Cast", [dimOf(b, mask, 1)], { to: DataType.INT32 });
  const [cosCache, sinCache] = rotaryCaches(b, s, opts.maxPositions);
  const presentDims = ["batch_size", kvh, "total_sequence_length", hd];

  const embed = b.init("model.embed_tokens.weight", w.embed, [s.vocabSize, D]);
  let residual = b.op("Gather", [embed, inputIds], { axis: 0 });
  // The pending residual branch output (attention or MLP) that the next SkipSimplifiedLayerNormalization adds.
  let pending: string | null = null;
  const norm = (weight: Float32Array, name: string): string => {
    const gamma = b.init(name, weight, [D]);
    const eps = { f: s.rmsNormEps };
    if (!pending) return b.op("SimplifiedLayerNormalization", [residual, gamma], { axis: -1, epsilon: eps });
    const [out, , , sum] = b.opN("SkipSimplifiedLayerNormalization", [residual, pending, gamma], {
      epsilon: eps,
    }, { ...ms, outputs: 4 });
    residual = sum;
    pending = null;
    return out;
  };

  w.layers.forEach((lw, l) => {
    const p = `model.layers.${l}`;
    const mm = (h: string, m: Float32Array, i: number, o: number, n: string) =>
      fusedMatMul(b, h, m, [i, o], `${p}.${n}`, format);
    const withBias = (y: string, bias: Float32Array | undefined, n: string) =>
      bias ? b.op("Add", [y, b.init(`${p}.${n}.bias`, bias, [bias.length])]) : y;
    const rotary = (x: string) =>
      b.op("RotaryEmbedding", [x, positionIds, cosCache, sinCache], { interleaved: 0 }, ms);

    const h = norm(lw.inputNorm, `${p}.input_layernorm.weight`);
    const gqa = { num_heads: nh, kv_num_heads: kvh, scale: { f: 1 / Math.sqrt(hd) } };
    const qkvDim = (nh + 2 * kvh) * hd;
    const [attn, presentK, presentV] = opts.packed
      ? b.opN(
        "GroupQueryAttention",
        [
          withBias(
            mm(h, concatColumns(D, [lw.q, lw.k, lw.v]), D, qkvDim, "self_attn.qkv_proj"),
            lw.qBias && lw.kBias && lw.vBias
              ? Float32Array.from([...lw.qBias, ...lw.kBias, ...lw.vBias])
              : undefined,
            "self_attn.qkv_proj",
          ),
          "",
          "",
          past[l].key,
          past[l].value,
          seqlensK,
          totalLen,
          cosCache,
          sinCache,
        ],
        { ...gqa, do_rotary: 1, rotary_interleaved: 0 },
        { ...ms, outputs: 3, name: `${p}.attn` },
      )
      : b.opN(
        "GroupQueryAttention",
        [
          rotary(withBias(mm(h, lw.q, D, nh * hd, "self_attn.q_proj"), lw.qBias, "self_attn.q_proj")),
          rotary(withBias(mm(h, lw.k, D, kvh * hd, "self_attn.k_proj"), lw.kBias, "self_attn.k_proj")),
          withBias(mm(h, lw.v, D, kvh * hd, "self_attn.v_proj"), lw.vBias, "self_attn.v_proj"),
          past[l].key,
          past[l].value,
          seqlensK,
          totalLen,
        ],
        gqa,
        { ...ms, outputs: 3, name: `${p}.attn` },
      );
    b.output(presentK, `present.${l}.key`, DataType.FLOAT, presentDims);
    b.output(presentV, `present.${l}.value`, DataType.FLOAT, presentDims);
    pending = mm(attn, lw.o, nh * hd, D, "self_attn.o_proj");

    const h2 = norm(lw.postNorm, `${p}.post_attention_layernorm.weight`);
    const I = s.intermediateSize;
    const [gate, up] = opts.packed
      ? b.opN(
        "Split",
        [
          mm(h2, concatColumns(D, [lw.gate, lw.up]), D, 2 * I, "mlp.gate_up_proj"),
          b.ci64([I, I]),
        ],
        { axis: -1 },
        { outputs: 2 },
      )
      : [mm(h2, lw.gate, D, I, "mlp.gate_proj"), mm(h2, lw.up, D, I, "mlp.up_proj")];
    const gated = b.op("Mul", [b.op("Mul", [gate, b.op("Sigmoid", [gate])]), up]);
    pending = mm(gated, lw.down, s.intermediateSize, D, "mlp.down_proj");
  });

  const normed = logitsToKeep(b, norm(w.finalNorm, "model.norm.weight"), opts);
  const head = w.lmHead ?? transpose(w.embed, s.vocabSize, D);
  const logits = fusedMatMul(b, normed, head, [D, s.vocabSize], "lm_head", format);
  b.output(logits, "logits", DataType.FLOAT, ["batch_size", "sequence_length", s.vocabSize]);
  return b;
}
