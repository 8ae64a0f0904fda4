// Owns the BERT encoder graph (as optimum exports it for feature-extraction: input_ids, attention_mask,
// token_type_ids -> last_hidden_state) and its seeded random weights, shared by embed-tiny and the
// all-MiniLM-L6-v2-shaped benchmark model.
import { DataType, GraphBuilder, MS_DOMAIN } from "./onnx_builder.ts";
import { dimOf, gelu, layerNorm, MASK_MIN, mergeHeads, splitHeads } from "./onnx_layers.ts";
import { type WeightFormat, weightMatMul } from "./onnx_quantize.ts";
import type { Prng } from "./prng.ts";

export interface BertShape {
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  intermediateSize: number;
  maxPositions: number;
  typeVocabSize: number;
  layerNormEps: number;
}

/** The HF config.json for a BertModel of this shape. */
export function bertConfig(s: BertShape, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ["BertModel"],
    attention_probs_dropout_prob: 0.1,
    classifier_dropout: null,
    hidden_act: "gelu",
    hidden_dropout_prob: 0.1,
    hidden_size: s.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: s.intermediateSize,
    layer_norm_eps: s.layerNormEps,
    max_position_embeddings: s.maxPositions,
    model_type: "bert",
    num_attention_heads: s.numHeads,
    num_hidden_layers: s.numLayers,
    pad_token_id: 0,
    position_embedding_type: "absolute",
    transformers_version: "4.44.0",
    type_vocab_size: s.typeVocabSize,
    use_cache: true,
    vocab_size: s.vocabSize,
    ...extra,
  };
}

/**
 * The encoder's random weights, drawn in one fixed order whatever the layout (so every layout of a model holds
 * the very same numbers): embeddings ~ N(0, embStd), matrices ~ N(0, 1/sqrt(fan_in)) so activations stay O(1)
 * through the layers and different inputs give visibly different outputs. Matrices are [in, out] (x @ W).
 */
export interface BertWeights {
  word: Float32Array;
  position: Float32Array;
  tokenType: Float32Array;
  embNorm: Norm;
  layers: {
    query: Dense;
    key: Dense;
    value: Dense;
    attnOut: Dense;
    attnNorm: Norm;
    inter: Dense;
    out: Dense;
    outNorm: Norm;
  }[];
}
interface Dense {
  w: Float32Array;
  b: Float32Array;
  rows: number;
  cols: number;
}
interface Norm {
  gamma: Float32Array;
  beta: Float32Array;
}

export function bertWeights(
  s: BertShape,
  rng: Prng,
  opts: { embStd?: number; uniform?: boolean } = {},
): BertWeights {
  const H = s.hiddenSize;
  const rand = (n: number, std: number) => (opts.uniform ? rng.uniforms(n, std) : rng.normals(n, std));
  const vector = (n: number, mean: number, std: number) => {
    const v = rand(n, std);
    for (let i = 0; i < n; i++) v[i] += mean;
    return v;
  };
  const dense = (rows: number, cols: number): Dense => {
    const w = rand(rows * cols, 1 / Math.sqrt(rows));
    return { w, b: vector(cols, 0, 0.02), rows, cols };
  };
  const norm = (): Norm => {
    const gamma = vector(H, 1, 0.05);
    return { gamma, beta: vector(H, 0, 0.05) };
  };
  const embStd = opts.embStd ?? 0.5;
  const word = rand(s.vocabSize * H, embStd);
  const position = rand(s.maxPositions * H, embStd);
  const tokenType = rand(s.typeVocabSize * H, embStd);
  const embNorm = norm();
  const layers = Array.from({ length: s.numLayers }, () => {
    const query = dense(H, H);
    const key = dense(H, H);
    const value = dense(H, H);
    const attnOut = dense(H, H);
    const attnNorm = norm();
    const inter = dense(H, s.intermediateSize);
    const out = dense(s.intermediateSize, H);
    return { query, key, value, attnOut, attnNorm, inter, out, outNorm: norm() };
  });
  return { word, position, tokenType, embNorm, layers };
}

/** The fused layout's file name, as sentence-transformers ships onnxruntime-optimized encoders. */
export const FUSED_BERT_FILE = "model_O2.onnx";

/** Encoder layouts: optimum's export (standard ops), or onnxruntime's fused BERT operators. */
export type BertLayout = "decomposed" | "fused";

/** The encoder graph in a layout and weight format (format applies to the decomposed layout). */
export function buildBert(
  s: BertShape,
  rng: Prng,
  opts: { embStd?: number; uniform?: boolean; format?: WeightFormat; layout?: BertLayout } = {},
): GraphBuilder {
  const w = bertWeights(s, rng, opts);
  return opts.layout === "fused" ? buildFusedBert(s, w) : buildDecomposedBert(s, w, opts.format ?? "fp32");
}

function bertInputs(b: GraphBuilder) {
  const dims = ["batch_size", "sequence_length"];
  return {
    inputIds: b.input("input_ids", DataType.INT64, dims),
    attentionMask: b.input("attention_mask", DataType.INT64, dims),
    tokenTypeIds: b.input("token_type_ids", DataType.INT64, dims),
  };
}

function buildDecomposedBert(s: BertShape, w: BertWeights, format: WeightFormat): GraphBuilder {
  const b = new GraphBuilder("bert");
  const H = s.hiddenSize;
  const hd = H / s.numHeads;
  /** x @ W + bias in the requested precision. */
  const dense = (x: string, name: string, d: Dense) => {
    const y = weightMatMul(b, x, d.w, d.rows, d.cols, `${name}.weight`, format);
    return b.op("Add", [y, b.init(`${name}.bias`, d.b, [d.cols])]);
  };
  const { inputIds, attentionMask, tokenTypeIds } = bertInputs(b);

  // Embeddings: word + absolute position (0..S-1) + token type, then LayerNorm.
  const wordEmb = b.init("embeddings.word_embeddings.weight", w.word, [s.vocabSize, H]);
  const posEmb = b.init("embeddings.position_embeddings.weight", w.position, [s.maxPositions, H]);
  const typeEmb = b.init("embeddings.token_type_embeddings.weight", w.tokenType, [s.typeVocabSize, H]);
  const seqLen = dimOf(b, inputIds, 1);
  const positions = b.op("Range", [b.ci64([0], []), seqLen, b.ci64([1], [])]);
  let x = b.op("Add", [
    b.op("Add", [b.op("Gather", [wordEmb, inputIds]), b.op("Gather", [posEmb, positions])]),
    b.op("Gather", [typeEmb, tokenTypeIds]),
  ]);
  const norm = (y: string, name: string, n: Norm) =>
    layerNorm(
      b,
      y,
      b.init(`${name}.weight`, n.gamma, [H]),
      b.init(`${name}.bias`, n.beta, [H]),
      s.layerNormEps,
    );
  x = norm(x, "embeddings.LayerNorm", w.embNorm);

  // Padding mask [B, 1, 1, S]: 0 where attended, most-negative float where padded.
  const maskF = b.op("Cast", [b.op("Unsqueeze", [attentionMask, b.ci64([1, 2])])], { to: DataType.FLOAT });
  const maskAdd = b.op("Mul", [b.op("Sub", [b.cf32([1], []), maskF]), b.cf32([MASK_MIN], [])]);
  const scale = b.cf32([1 / Math.sqrt(hd)], []);

  w.layers.forEach((lw, l) => {
    const p = `encoder.layer.${l}`;
    const q = splitHeads(b, dense(x, `${p}.attention.self.query`, lw.query), s.numHeads, hd);
    const k = splitHeads(b, dense(x, `${p}.attention.self.key`, lw.key), s.numHeads, hd);
    const v = splitHeads(b, dense(x, `${p}.attention.self.value`, lw.value), s.numHeads, hd);
    const kT = b.op("Transpose", [k], { perm: [0, 1, 3, 2] });
    const scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [q, kT]), scale]), maskAdd]);
    const ctx = mergeHeads(b, b.op("MatMul", [b.op("Softmax", [scores], { axis: -1 }), v]), s.numHeads, hd);
    const attnOut = dense(ctx, `${p}.attention.output.dense`, lw.attnOut);
    x = norm(b.op("Add", [attnOut, x]), `${p}.attention.output.LayerNorm`, lw.attnNorm);
    const inter = gelu(b, dense(x, `${p}.intermediate.dense`, lw.inter));
    const ffn = dense(inter, `${p}.output.dense`, lw.out);
    x = norm(b.op("Add", [ffn, x]), `${p}.output.LayerNorm`, lw.outNorm);
  });
  b.output(x, "last_hidden_state", DataType.FLOAT, ["batch_size", "sequence_length", H]);
  return b;
}

/**
 * The same encoder as onnxruntime's transformer optimizer leaves it (what sentence-transformers ships as
 * `model_O2.onnx`): EmbedLayerNormalization (the three lookups, their sum and the LayerNorm in one kernel),
 * Attention over packed Q/K/V weights with the padding mask as its raw 2-D mask, SkipLayerNormalization for
 * each residual add + bias + LayerNorm, BiasGelu after the intermediate MatMul. fp32 weights (com.microsoft
 * ops). Same input and output contract as the decomposed graph.
 */
function buildFusedBert(s: BertShape, w: BertWeights): GraphBuilder {
  const b = new GraphBuilder("bert");
  const H = s.hiddenSize;
  const ms = { domain: MS_DOMAIN };
  const eps = { f: s.layerNormEps };
  const { inputIds, attentionMask, tokenTypeIds } = bertInputs(b);
  const i32 = (x: string) => b.op("Cast", [x], { to: DataType.INT32 });
  const mask = i32(attentionMask);
  const vec = (name: string, v: Float32Array) => b.init(name, v, [v.length]);
  // Its second output (the mask's row lengths) is unused: Attention takes the raw mask, so padding may sit anywhere.
  let [x] = b.opN(
    "EmbedLayerNormalization",
    [
      i32(inputIds),
      i32(tokenTypeIds),
      b.init("embeddings.word_embeddings.weight", w.word, [s.vocabSize, H]),
      b.init("embeddings.position_embeddings.weight", w.position, [s.maxPositions, H]),
      b.init("embeddings.token_type_embeddings.weight", w.tokenType, [s.typeVocabSize, H]),
      vec("embeddings.LayerNorm.weight", w.embNorm.gamma),
      vec("embeddings.LayerNorm.beta", w.embNorm.beta),
    ],
    { epsilon: eps },
    { ...ms, outputs: 2 },
  );
  const matmul = (y: string, name: string, d: Dense) =>
    b.op("MatMul", [y, b.init(name, d.w, [d.rows, d.cols])]);
  w.layers.forEach((lw, l) => {
    const p = `encoder.layer.${l}`;
    // Packed [H, 3H]: the query, key and value columns side by side, then their biases likewise.
    const qkv = new Float32Array(H * 3 * H);
    for (let r = 0; r < H; r++) {
      [lw.query, lw.key, lw.value].forEach((d, j) =>
        qkv.set(d.w.subarray(r * H, (r + 1) * H), r * 3 * H + j * H)
      );
    }
    const qkvBias = new Float32Array(3 * H);
    [lw.query, lw.key, lw.value].forEach((d, j) => qkvBias.set(d.b, j * H));
    const attn = b.op(
      "Attention",
      [
        x,
        b.init(`${p}.attention.qkv.weight`, qkv, [H, 3 * H]),
        vec(`${p}.attention.qkv.bias`, qkvBias),
        mask,
      ],
      { num_heads: s.numHeads },
      ms,
    );
    x = b.op(
      "SkipLayerNormalization",
      [
        matmul(attn, `${p}.attention.output.dense.weight`, lw.attnOut),
        x,
        vec(`${p}.attention.output.LayerNorm.weight`, lw.attnNorm.gamma),
        vec(`${p}.attention.output.LayerNorm.bias`, lw.attnNorm.beta),
        vec(`${p}.attention.output.dense.bias`, lw.attnOut.b),
      ],
      { epsilon: eps },
      ms,
    );
    const inter = b.op(
      "BiasGelu",
      [
        matmul(x, `${p}.intermediate.dense.weight`, lw.inter),
        vec(`${p}.intermediate.dense.bias`, lw.inter.b),
      ],
      {},
      ms,
    );
    x = b.op(
      "SkipLayerNormalization",
      [
        matmul(inter, `${p}.output.dense.weight`, lw.out),
        x,
        vec(`${p}.output.LayerNorm.weight`, lw.outNorm.gamma),
        vec(`${p}.output.LayerNorm.bias`, lw.outNorm.beta),
        vec(`${p}.output.dense.bias`, lw.out.b),
      ],
      { epsilon: eps },
      ms,
    );
  });
  b.output(x, "last_hidden_state", DataType.FLOAT, ["batch_size", "sequence_length", H]);
  return b;
}
