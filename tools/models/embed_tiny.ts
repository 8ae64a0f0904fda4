// Owns the embed-tiny generator: a 2-layer, 32-wide BERT encoder with seeded random weights in the folder
// layout the transformers.js feature-extraction pipeline and sentence-transformers expect (fp32 + q8 ONNX, and
// fp32 with onnxruntime's fused BERT operators as onnx/model_O2.onnx),
// and the same weights and vocabulary as GGUF (F32, Q8_0) for the llama.cpp backend (gguf/).
import { join } from "node:path";
import { bertConfig, type BertShape, buildBert, FUSED_BERT_FILE } from "./bert_graph.ts";
import { MS_DOMAIN } from "./onnx_builder.ts";
import { bertGguf } from "./gguf_writer.ts";
import { writeJson, writeSentenceTransformerFiles } from "./model_files.ts";
import { ONNX_FILE } from "./onnx_quantize.ts";
import { Prng } from "./prng.ts";
import { BERT_SPECIALS, wordPieceVocab, writeWordPieceTokenizer } from "./wordpiece_tokenizer.ts";

export const VERSION = "embed-tiny-4";

export const EMBED_TINY_MAX_LENGTH = 128;

export function embedTinyShape(): BertShape {
  return {
    vocabSize: wordPieceVocab().length,
    hiddenSize: 32,
    numLayers: 2,
    numHeads: 4,
    intermediateSize: 64,
    maxPositions: EMBED_TINY_MAX_LENGTH,
    typeVocabSize: 2,
    layerNormEps: 1e-12,
  };
}

export async function generate(outDir: string): Promise<void> {
  const vocab = wordPieceVocab();
  const shape = embedTinyShape();
  await Deno.mkdir(join(outDir, "onnx"), { recursive: true });
  await writeJson(outDir, "config.json", bertConfig(shape));
  await writeWordPieceTokenizer(outDir, vocab, EMBED_TINY_MAX_LENGTH);
  await writeSentenceTransformerFiles(outDir, shape.hiddenSize, EMBED_TINY_MAX_LENGTH);
  // Same seed per file, so model_quantized.onnx is the int8 version of exactly the fp32 weights.
  for (const format of ["fp32", "q8"] as const) {
    await buildBert(shape, new Prng("embed-tiny"), { format }).save(join(outDir, "onnx"), ONNX_FILE[format]);
  }
  // The same weights with onnxruntime's fused BERT operators, named as sentence-transformers ships them.
  await buildBert(shape, new Prng("embed-tiny"), { layout: "fused" })
    .save(join(outDir, "onnx"), FUSED_BERT_FILE, { extraOpsets: { [MS_DOMAIN]: 1 } });
  // The GGUF files take their weights from the fp32 graph's initializers: the very same numbers.
  const graph = buildBert(shape, new Prng("embed-tiny"), { format: "fp32" });
  const weight = (name: string) => {
    const init = graph.initializers.find((t) => t.name === name);
    if (!init) throw new Error(`embed-tiny has no initializer ${name}`);
    return new Float32Array(init.bytes.slice().buffer);
  };
  const id = (t: (typeof BERT_SPECIALS)[number]) => vocab.indexOf(t);
  await Deno.mkdir(join(outDir, "gguf"), { recursive: true });
  for (const type of ["F32", "Q8_0"] as const) {
    const file = bertGguf({
      name: "embed-tiny",
      shape,
      weight,
      type,
      vocab,
      special: { pad: id("[PAD]"), unk: id("[UNK]"), cls: id("[CLS]"), sep: id("[SEP]"), mask: id("[MASK]") },
      pooling: 1, // mean, as its sentence-transformers pooling config says
    });
    await Deno.writeFile(join(outDir, "gguf", `embed-tiny-${type}.gguf`), file);
  }
}
