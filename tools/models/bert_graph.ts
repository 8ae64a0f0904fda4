// Owns the BERT encoder graph (as optimum exports it for feature-extraction: input_ids, attention_mask,
// token_type_ids -> last_hidden_state) and its seeded random weights, shared by embed-tiny and the
// all-MiniLM-L6-v2-shaped benchmark model.
import { DataType, GraphBuilder } from "./onnx_builder.ts";
import { dimOf, gelu, layerNorm, linear, MASK_MIN, mergeHeads, splitHeads } from "./onnx_layers.ts";
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
export function buildBert(s: BertShape, rng: Prng, opts: { embStd?: number; uniform?: boolean } = {}): GraphBuilder {
  const b = new GraphBuilder("bert");
  const H = s.hiddenSize;
  const hd = H / s.numHeads;
  const rand = (n: number, std: number) => (opts.uniform ? rng.uniforms(n, std) : rng.normals(n, std));
  const matrix = (name: string, rows: number, cols: number) => b.init(name, rand(rows * cols, 1 / Math.sqrt(rows)), [rows, cols]);
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
  const wordEmb = b.init("embeddings.word_embeddings.weight", rand(s.vocabSize * H, embStd), [s.vocabSize, H]);
  const posEmb = b.init("embeddings.position_embeddings.weight", rand(s.maxPositions * H, embStd), [s.maxPositions, H]);
  const typeEmb = b.init("embeddings.token_type_embeddings.weight", rand(s.typeVocabSize * H, embStd), [s.typeVocabSize, H]);
  const seqLen = dimOf(b, inputIds, 1);
  const positions = b.op("Range", [b.ci64([0], []), seqLen, b.ci64([1], [])]);
  let x = b.op("Add", [
    b.op("Add", [b.op("Gather", [wordEmb, inputIds]), b.op("Gather", [posEmb, positions])]),
    b.op("Gather", [typeEmb, tokenTypeIds]),
  ]);
  x = layerNorm(b, x, vector("embeddings.LayerNorm.weight", H, 1, 0.05), vector("embeddings.LayerNorm.bias", H, 0, 0.05), s.layerNormEps);

  // Padding mask [B, 1, 1, S]: 0 where attended, most-negative float where padded.
  const maskF = b.op("Cast", [b.op("Unsqueeze", [attentionMask, b.ci64([1, 2])])], { to: DataType.FLOAT });
  const maskAdd = b.op("Mul", [b.op("Sub", [b.cf32([1], []), maskF]), b.cf32([MASK_MIN], [])]);
  const scale = b.cf32([1 / Math.sqrt(hd)], []);

  for (let l = 0; l < s.numLayers; l++) {
    const p = `encoder.layer.${l}`;
    const q = splitHeads(b, linear(b, x, matrix(`${p}.attention.self.query.weight`, H, H), vector(`${p}.attention.self.query.bias`, H, 0, 0.02)), s.numHeads, hd);
    const k = splitHeads(b, linear(b, x, matrix(`${p}.attention.self.key.weight`, H, H), vector(`${p}.attention.self.key.bias`, H, 0, 0.02)), s.numHeads, hd);
    const v = splitHeads(b, linear(b, x, matrix(`${p}.attention.self.value.weight`, H, H), vector(`${p}.attention.self.value.bias`, H, 0, 0.02)), s.numHeads, hd);
    const kT = b.op("Transpose", [k], { perm: [0, 1, 3, 2] });
    const scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [q, kT]), scale]), maskAdd]);
    const ctx = mergeHeads(b, b.op("MatMul", [b.op("Softmax", [scores], { axis: -1 }), v]), s.numHeads, hd);
    const attnOut = linear(b, ctx, matrix(`${p}.attention.output.dense.weight`, H, H), vector(`${p}.attention.output.dense.bias`, H, 0, 0.02));
    x = layerNorm(b, b.op("Add", [attnOut, x]), vector(`${p}.attention.output.LayerNorm.weight`, H, 1, 0.05), vector(`${p}.attention.output.LayerNorm.bias`, H, 0, 0.05), s.layerNormEps);
    const inter = gelu(b, linear(b, x, matrix(`${p}.intermediate.dense.weight`, H, s.intermediateSize), vector(`${p}.intermediate.dense.bias`, s.intermediateSize, 0, 0.02)));
    const ffn = linear(b, inter, matrix(`${p}.output.dense.weight`, s.intermediateSize, H), vector(`${p}.output.dense.bias`, H, 0, 0.02));
    x = layerNorm(b, b.op("Add", [ffn, x]), vector(`${p}.output.LayerNorm.weight`, H, 1, 0.05), vector(`${p}.output.LayerNorm.bias`, H, 0, 0.05), s.layerNormEps);
  }
  b.output(x, "last_hidden_state", DataType.FLOAT, ["batch_size", "sequence_length", H]);
  return b;
}
