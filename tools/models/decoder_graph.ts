// Owns the decoder-only (Llama / Qwen2) ONNX graph in the layout onnx-community exports and transformers.js
// drives for text generation: input_ids, attention_mask, position_ids, past_key_values.N.key/value ->
// logits, present.N.key/value; RMSNorm, rotary embeddings from position_ids, grouped-query attention over
// the KV cache with causal + padding mask, SwiGLU MLP. Weights are supplied by the caller (crafted or random).
import { DataType, GraphBuilder } from "./onnx_builder.ts";
import { dimOf, MASK_MIN, mergeHeads, rmsNorm, silu, splitHeads } from "./onnx_layers.ts";
import { type WeightFormat, weightMatMul } from "./onnx_quantize.ts";

export interface DecoderShape {
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  ropeTheta: number;
  rmsNormEps: number;
  /** Qwen2 has q/k/v biases, Llama none. */
  attentionBias: boolean;
  tieWordEmbeddings: boolean;
}

export interface DecoderLayerWeights {
  inputNorm: Float32Array;
  q: Float32Array; // [hidden, heads*hd]
  k: Float32Array; // [hidden, kvHeads*hd]
  v: Float32Array;
  qBias?: Float32Array;
  kBias?: Float32Array;
  vBias?: Float32Array;
  o: Float32Array; // [heads*hd, hidden]
  postNorm: Float32Array;
  gate: Float32Array; // [hidden, intermediate]
  up: Float32Array;
  down: Float32Array; // [intermediate, hidden]
}

export interface DecoderWeights {
  embed: Float32Array; // [vocab, hidden]
  layers: DecoderLayerWeights[];
  finalNorm: Float32Array;
  /** [hidden, vocab]; omitted when embeddings are tied. */
  lmHead?: Float32Array;
}

/** Row-major [rows, cols] -> [cols, rows]. */
export function transpose(m: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c];
  return t;
}

/** cos/sin tables [B, 1, S, hd] from position_ids, HF "rotate_half" convention (pairs i and i + hd/2). */
function ropeTables(b: GraphBuilder, positionIds: string, s: DecoderShape): [string, string] {
  const half = s.headDim / 2;
  const invFreq = Array.from({ length: half }, (_, i) => 1 / Math.pow(s.ropeTheta, (2 * i) / s.headDim));
  const pos = b.op("Unsqueeze", [b.op("Cast", [positionIds], { to: DataType.FLOAT }), b.ci64([2])]);
  const freqs = b.op("Mul", [pos, b.f32("rotary_inv_freq", invFreq, [half])]);
  const emb = b.op("Concat", [freqs, freqs], { axis: -1 });
  const axis1 = b.ci64([1]);
  return [b.op("Unsqueeze", [b.op("Cos", [emb]), axis1]), b.op("Unsqueeze", [b.op("Sin", [emb]), axis1])];
}

function applyRope(b: GraphBuilder, x: string, cos: string, sin: string, half: number): string {
  const [x1, x2] = b.opN("Split", [x, b.ci64([half, half])], { axis: -1 }, { outputs: 2 });
  const rotated = b.op("Concat", [b.op("Neg", [x2]), x1], { axis: -1 });
  return b.op("Add", [b.op("Mul", [x, cos]), b.op("Mul", [rotated, sin])]);
}

/** Additive mask [B, 1, 1, S, T] (extra axis for the grouped heads): causal over past+new, and padding. */
function attentionMask(b: GraphBuilder, inputIds: string, mask: string, pastKey: string): string {
  const seq = dimOf(b, inputIds, 1);
  const past = dimOf(b, pastKey, 2);
  const total = b.op("Add", [past, seq]);
  const one = b.ci64([1], []);
  const rows = b.op("Unsqueeze", [b.op("Range", [past, total, one]), b.ci64([1])]); // [S, 1]
  const cols = b.op("Range", [b.ci64([0], []), total, one]); // [T]
  const causal = b.op("LessOrEqual", [cols, rows]); // [S, T]
  const pad = b.op("Unsqueeze", [b.op("Cast", [mask], { to: DataType.BOOL }), b.ci64([1, 2])]); // [B,1,1,T]
  const allowed = b.op("And", [causal, pad]); // [B, 1, S, T]
  const additive = b.op("Where", [allowed, b.cf32([0], []), b.cf32([MASK_MIN], [])]);
  return b.op("Unsqueeze", [additive, b.ci64([1])]);
}

/** Optional parts of a decoder's input contract, as some exports carry them. */
export interface LayoutOptions {
  /** A `num_logits_to_keep` int64 scalar input: logits for the last N positions only (0 = all). */
  logitsToKeep?: boolean;
  /**
   * A `use_cache_branch` bool input, as optimum's merged decoders (`decoder_model_merged.onnx`) have: an If
   * node feeds the cache to the layers on its true branch and an empty one on its false branch, so a runtime
   * that feeds the flag wrong gets a reply that ignores its history.
   */
  cacheBranch?: boolean;
}

export interface DecoderInputs {
  b: GraphBuilder;
  inputIds: string;
  mask: string;
  positionIds: string;
  /** Per layer, the cache the layer reads (after the cache branch, when there is one). */
  past: { key: string; value: string }[];
}

/** A decoder graph with its inputs declared: ids, mask, positions, the cache and the optional inputs. */
export function newDecoderGraph(s: DecoderShape, opts: LayoutOptions = {}): DecoderInputs {
  const b = new GraphBuilder("decoder");
  const inputIds = b.input("input_ids", DataType.INT64, ["batch_size", "sequence_length"]);
  const mask = b.input("attention_mask", DataType.INT64, ["batch_size", "total_sequence_length"]);
  const positionIds = b.input("position_ids", DataType.INT64, ["batch_size", "sequence_length"]);
  const pastDims = ["batch_size", s.numKvHeads, "past_sequence_length", s.headDim];
  let past = Array.from({ length: s.numLayers }, (_, l) => ({
    key: b.input(`past_key_values.${l}.key`, DataType.FLOAT, pastDims),
    value: b.input(`past_key_values.${l}.value`, DataType.FLOAT, pastDims),
  }));
  if (opts.logitsToKeep) b.input("num_logits_to_keep", DataType.INT64, []);
  if (opts.cacheBranch) past = cacheBranch(b, past, pastDims);
  return { b, inputIds, mask, positionIds, past };
}

/** If(use_cache_branch): the cache as given, else the cache cut to no positions. */
function cacheBranch(
  b: GraphBuilder,
  past: { key: string; value: string }[],
  dims: (string | number)[],
): { key: string; value: string }[] {
  const flag = b.input("use_cache_branch", DataType.BOOL, [1]);
  const names = past.flatMap((p) => [p.key, p.value]);
  const zero = b.ci64([0]);
  const axis = b.ci64([2]);
  const branch = (taken: boolean) =>
    b.subgraph(
      taken ? "with_past" : "without_past",
      names.map((n) => ({
        value: n,
        op: taken ? "Identity" : "Slice",
        inputs: taken ? [n] : [n, zero, zero, axis],
      })),
      DataType.FLOAT,
      dims,
    );
  const outs = b.opN("If", [flag], { then_branch: { g: branch(true) }, else_branch: { g: branch(false) } }, {
    outputs: names.length,
    name: "use_cache_branch",
  });
  return past.map((_, l) => ({ key: outs[2 * l], value: outs[2 * l + 1] }));
}

/** The last `num_logits_to_keep` positions of the final hidden states (all of them for 0), when asked. */
export function logitsToKeep(b: GraphBuilder, hidden: string, opts: LayoutOptions): string {
  if (!opts.logitsToKeep) return hidden;
  // Slice from -N: -0 is 0, so N = 0 keeps every position, as the exports define it.
  const start = b.op("Neg", [b.op("Unsqueeze", ["num_logits_to_keep", b.ci64([0])])]);
  return b.op("Slice", [hidden, start, b.ci64([2 ** 53 - 1]), b.ci64([1])]);
}

export function buildDecoder(
  s: DecoderShape,
  w: DecoderWeights,
  format: WeightFormat,
  opts: LayoutOptions = {},
): GraphBuilder {
  const { b, inputIds, mask, positionIds, past } = newDecoderGraph(s, opts);
  const { hiddenSize: D, numHeads: nh, numKvHeads: kvh, headDim: hd } = s;
  const rep = nh / kvh;

  const embed = b.init("model.embed_tokens.weight", w.embed, [s.vocabSize, D]);
  let x = b.op("Gather", [embed, inputIds], { axis: 0 });
  const [cos, sin] = ropeTables(b, positionIds, s);
  const maskAdd = attentionMask(b, inputIds, mask, past[0].key);
  const scale = b.cf32([1 / Math.sqrt(hd)], []);
  const presentDims = ["batch_size", kvh, "total_sequence_length", hd];

  w.layers.forEach((lw, l) => {
    const p = `model.layers.${l}`;
    const mm = (h: string, m: Float32Array, i: number, o: number, n: string) =>
      weightMatMul(b, h, m, i, o, `${p}.${n}`, format);
    const withBias = (y: string, bias: Float32Array | undefined, n: string) =>
      bias ? b.op("Add", [y, b.init(`${p}.${n}.bias`, bias, [bias.length])]) : y;

    const h = rmsNorm(b, x, b.init(`${p}.input_layernorm.weight`, lw.inputNorm, [D]), s.rmsNormEps);
    const q = splitHeads(
      b,
      withBias(mm(h, lw.q, D, nh * hd, "self_attn.q_proj"), lw.qBias, "self_attn.q_proj"),
      nh,
      hd,
    );
    const k = splitHeads(
      b,
      withBias(mm(h, lw.k, D, kvh * hd, "self_attn.k_proj"), lw.kBias, "self_attn.k_proj"),
      kvh,
      hd,
    );
    const v = splitHeads(
      b,
      withBias(mm(h, lw.v, D, kvh * hd, "self_attn.v_proj"), lw.vBias, "self_attn.v_proj"),
      kvh,
      hd,
    );
    const qr = applyRope(b, q, cos, sin, hd / 2);
    const kr = applyRope(b, k, cos, sin, hd / 2);
    // The cache holds rotated keys, as HF's DynamicCache does.
    const keys = b.op("Concat", [past[l].key, kr], { axis: 2 });
    const values = b.op("Concat", [past[l].value, v], { axis: 2 });
    b.output(keys, `present.${l}.key`, DataType.FLOAT, presentDims);
    b.output(values, `present.${l}.value`, DataType.FLOAT, presentDims);

    // Grouped-query attention without copying K/V: view q as [B, kvh, rep, S, hd] and let MatMul broadcast
    // the [B, kvh, 1, T, hd] keys/values over the `rep` query heads that share them.
    const q5 = b.op("Reshape", [b.op("Mul", [qr, scale]), b.ci64([0, kvh, rep, -1, hd])]);
    const axis2 = b.ci64([2]);
    const k5 = b.op("Transpose", [b.op("Unsqueeze", [keys, axis2])], { perm: [0, 1, 2, 4, 3] });
    const scores = b.op("Add", [b.op("MatMul", [q5, k5]), maskAdd]);
    const probs = b.op("Softmax", [scores], { axis: -1 });
    const ctx5 = b.op("MatMul", [probs, b.op("Unsqueeze", [values, axis2])]);
    const ctx = mergeHeads(b, b.op("Reshape", [ctx5, b.ci64([0, nh, -1, hd])]), nh, hd);
    x = b.op("Add", [x, mm(ctx, lw.o, nh * hd, D, "self_attn.o_proj")]);

    const h2 = rmsNorm(b, x, b.init(`${p}.post_attention_layernorm.weight`, lw.postNorm, [D]), s.rmsNormEps);
    const gated = b.op("Mul", [
      silu(b, mm(h2, lw.gate, D, s.intermediateSize, "mlp.gate_proj")),
      mm(h2, lw.up, D, s.intermediateSize, "mlp.up_proj"),
    ]);
    x = b.op("Add", [x, mm(gated, lw.down, s.intermediateSize, D, "mlp.down_proj")]);
  });

  const normed = logitsToKeep(
    b,
    rmsNorm(b, x, b.init("model.norm.weight", w.finalNorm, [D]), s.rmsNormEps),
    opts,
  );
  let logits: string;
  if (w.lmHead) logits = weightMatMul(b, normed, w.lmHead, D, s.vocabSize, "lm_head", format);
  else if (format === "fp32") {
    logits = b.op("MatMul", [normed, b.op("Transpose", [embed], { perm: [1, 0] })], {}, { name: "lm_head" });
  } else {logits = weightMatMul(
      b,
      normed,
      transpose(w.embed, s.vocabSize, D),
      D,
      s.vocabSize,
      "lm_head",
      format,
    );}
  b.output(logits, "logits", DataType.FLOAT, ["batch_size", "sequence_length", s.vocabSize]);
  return b;
}

/** HF config.json fields shared by the Llama and Qwen2 configs we write. */
export function decoderConfig(
  s: DecoderShape,
  modelType: "llama" | "qwen2",
  extra: Record<string, unknown>,
): Record<string, unknown> {
  return {
    architectures: [modelType === "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"],
    attention_dropout: 0.0,
    hidden_act: "silu",
    hidden_size: s.hiddenSize,
    head_dim: s.headDim,
    initializer_range: 0.02,
    intermediate_size: s.intermediateSize,
    model_type: modelType,
    num_attention_heads: s.numHeads,
    num_hidden_layers: s.numLayers,
    num_key_value_heads: s.numKvHeads,
    rms_norm_eps: s.rmsNormEps,
    rope_scaling: null,
    rope_theta: s.ropeTheta,
    tie_word_embeddings: s.tieWordEmbeddings,
    torch_dtype: "float32",
    transformers_version: "4.45.0",
    use_cache: true,
    vocab_size: s.vocabSize,
    ...extra,
  };
}
