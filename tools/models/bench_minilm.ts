// Owns the all-MiniLM-L6-v2-shaped benchmark encoder: BERT with hidden 384, 6 layers, 12 heads, intermediate
// 1536, vocab 30522, 512 positions, seeded random weights, fp32 + q8 ONNX (+ fp32 fused, onnx/model_O2.onnx), WordPiece tokenizer and the
// sentence-transformers mean-pooling + normalize files. For speed/memory measurements, not for quality.
import { join } from "node:path";
import { bertConfig, type BertShape, buildBert, FUSED_BERT_FILE } from "./bert_graph.ts";
import { MS_DOMAIN } from "./onnx_builder.ts";
import { writeJson, writeSentenceTransformerFiles } from "./model_files.ts";
import { ONNX_FILE } from "./onnx_quantize.ts";
import { Prng } from "./prng.ts";
import { wordPieceVocab, writeWordPieceTokenizer } from "./wordpiece_tokenizer.ts";

export const VERSION = "minilm-l6-bench-2";

export const MINILM_SHAPE: BertShape = {
  vocabSize: 30522,
  hiddenSize: 384,
  numLayers: 6,
  numHeads: 12,
  intermediateSize: 1536,
  maxPositions: 512,
  typeVocabSize: 2,
  layerNormEps: 1e-12,
};

export async function generate(outDir: string): Promise<void> {
  const s = MINILM_SHAPE;
  await Deno.mkdir(join(outDir, "onnx"), { recursive: true });
  await writeJson(
    outDir,
    "config.json",
    bertConfig(s, { architectures: ["BertModel"], gradient_checkpointing: false }),
  );
  await writeWordPieceTokenizer(outDir, wordPieceVocab(s.vocabSize), 512);
  await writeSentenceTransformerFiles(outDir, s.hiddenSize, 256);
  for (const format of ["fp32", "q8"] as const) {
    const graph = buildBert(s, new Prng("minilm-l6-bench"), { embStd: 0.05, uniform: true, format });
    await graph.save(join(outDir, "onnx"), ONNX_FILE[format]);
  }
  await buildBert(s, new Prng("minilm-l6-bench"), { embStd: 0.05, uniform: true, layout: "fused" })
    .save(join(outDir, "onnx"), FUSED_BERT_FILE, { extraOpsets: { [MS_DOMAIN]: 1 } });
}
