// Owns the BERT encoder graph (as optimum exports it for feature-extraction: input_ids, attention_mask,
// token_type_ids -> last_hidden_state) and its seeded random weights, shared by embed-tiny and the
// all-MiniLM-L6-v2-shaped benchmark model.
import { DataType, GraphBuilder } from "./onnx_builder.ts";
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
 * Builds the encoder with random weights: embeddings ~ N(0, embStd), matrices ~ N(0, 1/sqrt(fan_in)) so
 * activations stay O(1) through the layers and different inputs give visibly different outputs.
 */
export function buildBert(
  s: BertShape,
  rng: Prng,
  opts: { embStd?: number; uniform?: boolean; format?: WeightFormat } = {},
): GraphBuilder {
  const b = new GraphBuilder("bert");
  const H = s.hiddenSize;
  const hd = H / s.numHeads;
  const rand = (n: number, std: number) => (opts.uniform ? rng.uniforms(n, std) : rng.normals(n, std));
  /** x @ W + bias with W random [rows, cols] in the requested precision. */
  const dense = (x: string, name: string, rows: number, cols: number) => {
    const w = rand(rows * cols, 1 / Math.sqrt(rows));
    const y = weightMatMul(b, x, w, rows, cols, `${name}.weight`, opts.format ?? "fp32");
    return b.op("Add", [y, vector(`${name}.bias`, cols, 0, 0.02)]);
  };
  const vector = (name: string, n: number, mean: number, std: number) => {
    const v = rand(n, std);
    for (let i = 0; i < n; i++) v[i] += mean;
    return b.init(name, v, [n]);
  };

  const inputIds = b.input("input_ids", DataType.INT64, ["batch_size", "sequence_length"]);
  const attentionMask = b.input("attention_mask", DataType.INT64, ["batch_size", "sequence_length"]);
  const tokenTypeIds = b.input("token_type_ids", DataType.INT64, ["batch_size", "sequence_length"]);

  // Embeddings: word + absolute position (0..S-1) + token type, then LayerNorm.
  const embStd = opts.embStd ?? 0.5;
  const wordEmb = b.init("embeddings.word_embeddings.weight", rand(s.vocabSize * H, embStd), [
    s.vocabSize,
    H,
  ]);
  const posEmb = b.init("embeddings.position_embeddings.weight", rand(s.maxPositions * H, embStd), [
    s.maxPositions,
    H,
  ]);
  const typeEmb = b.init("embeddings.token_type_embeddings.weight", rand(s.typeVocabSize * H, embStd), [
    s.typeVocabSize,
    H,
  ]);
  const seqLen = dimOf(b, inputIds, 1);
  const positions = b.op("Range", [b.ci64([0], []), seqLen, b.ci64([1], [])]);
  let x = b.op("Add", [
    b.op("Add", [b.op("Gather", [wordEmb, inputIds]), b.op("Gather", [posEmb, positions])]),
    b.op("Gather", [typeEmb, tokenTypeIds]),
  ]);
  const norm = (y: string, name: string) =>
    layerNorm(b, y, vector(`${name}.weight`, H, 1, 0.05), vector(`${name}.bias`, H, 0, 0.05), s.layerNormEps);
  x = norm(x, "embeddings.LayerNorm");

  // Padding mask [B, 1, 1, S]: 0 where attended, most-negative float where padded.
  const maskF = b.op("Cast", [b.op("Unsqueeze", [attentionMask, b.ci64([1, 2])])], { to: DataType.FLOAT });
  const maskAdd = b.op("Mul", [b.op("Sub", [b.cf32([1], []), maskF]), b.cf32([MASK_MIN], [])]);
  const scale = b.cf32([1 / Math.sqrt(hd)], []);

  for (let l = 0; l < s.numLayers; l++) {
    const p = `encoder.layer.${l}`;
    const q = splitHeads(b, dense(x, `${p}.attention.self.query`, H, H), s.numHeads, hd);
    const k = splitHeads(b, dense(x, `${p}.attention.self.key`, H, H), s.numHeads, hd);
    const v = splitHeads(b, dense(x, `${p}.attention.self.value`, H, H), s.numHeads, hd);
    const kT = b.op("Transpose", [k], { perm: [0, 1, 3, 2] });
    const scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [q, kT]), scale]), maskAdd]);
    const ctx = mergeHeads(b, b.op("MatMul", [b.op("Softmax", [scores], { axis: -1 }), v]), s.numHeads, hd);
    const attnOut = dense(ctx, `${p}.attention.output.dense`, H, H);
    x = norm(b.op("Add", [attnOut, x]), `${p}.attention.output.LayerNorm`);
    const inter = gelu(b, dense(x, `${p}.intermediate.dense`, H, s.intermediateSize));
    const ffn = dense(inter, `${p}.output.dense`, s.intermediateSize, H);
    x = norm(b.op("Add", [ffn, x]), `${p}.output.LayerNorm`);
  }
  b.output(x, "last_hidden_state", DataType.FLOAT, ["batch_size", "sequence_length", H]);
  return b;
}
