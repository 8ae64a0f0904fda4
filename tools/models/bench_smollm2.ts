// Owns the SmolLM2-135M-Instruct-shaped benchmark model: the real architecture (Llama, 30 layers, hidden 576,
// 9 heads / 3 KV heads, vocab 49152, tied embeddings) with seeded random weights, as fp32, q8 and q4 ONNX
// (and fp16, q8, q4, q4f16 in the packed fused layout: `gqa`; fp16, q4 with external data and a merged q8
// decoder: `layouts`), and as Q8_0 and Q4_0 GGUF (gguf/), plus a 49152-entry byte-level BPE tokenizer (trained merges topped up with synthetic ones) and the chat
// template. Its output is gibberish by design: it exists to measure speed and memory at a real size.
import { join } from "node:path";
import { BYTE_TOKENS, type Merge, preTokenize, trainBpe, writeByteLevelTokenizer } from "./bpe_tokenizer.ts";
import { SMOLLM2_CHAT_TEMPLATE } from "./chat_templates.ts";
import { decoderConfig, type DecoderShape, type DecoderWeights } from "./decoder_graph.ts";
import { ENGLISH_WORDS, SAMPLE_TEXT } from "./english_words.ts";
import { writeJson } from "./model_files.ts";
import { type DecoderLayout, writeDecoderLayout } from "./decoder_layouts.ts";
import { Prng } from "./prng.ts";
import { bpeTokenizerMeta, decoderGguf } from "./gguf_writer.ts";

export const VERSION = "smollm2-135m-bench-2";

export const SMOLLM2_SHAPE: DecoderShape = {
  vocabSize: 49152,
  hiddenSize: 576,
  numLayers: 30,
  numHeads: 9,
  numKvHeads: 3,
  headDim: 64,
  intermediateSize: 1536,
  ropeTheta: 100000,
  rmsNormEps: 1e-5,
  attentionBias: false,
  tieWordEmbeddings: true,
};

/** SmolLM2's special tokens, which are its ids 0..16. */
const SPECIALS = [
  "<|endoftext|>",
  "<|im_start|>",
  "<|im_end|>",
  "<repo_name>",
  "<reponame>",
  "<file_sep>",
  "<filename>",
  "<gh_stars>",
  "<issue_start>",
  "<issue_comment>",
  "<issue_closed>",
  "<jupyter_start>",
  "<jupyter_text>",
  "<jupyter_code>",
  "<jupyter_output>",
  "<jupyter_script>",
  "<empty_output>",
];

/** Vocabulary of exactly `size`: specials, bytes, merges trained on the built-in text, then synthetic merges
 * (a word-like token + one letter) until full, so the merge table is as long as a real one. */
function smolVocab(size: number): { vocab: string[]; merges: Merge[] } {
  const counts = new Map<string, number>();
  for (const text of [...ENGLISH_WORDS.map((w) => ` ${w}`), SAMPLE_TEXT]) {
    for (const c of preTokenize(text)) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  const merges = trainBpe(counts, 2000);
  const vocab = [...SPECIALS, ...BYTE_TOKENS];
  const seen = new Set(vocab);
  for (const [a, b] of merges) seen.add(a + b), vocab.push(a + b);
  const letters = "abcdefghijklmnopqrstuvwxyz";
  for (let i = 0; vocab.length < size; i++) {
    const base = vocab[i];
    if (!/^Ġ?[A-Za-z]+$/.test(base)) continue;
    for (const c of letters) {
      if (vocab.length >= size) break;
      if (!seen.has(base + c)) seen.add(base + c), vocab.push(base + c), merges.push([base, c]);
    }
  }
  return { vocab, merges };
}

function randomWeights(s: DecoderShape, rng: Prng): DecoderWeights {
  const D = s.hiddenSize;
  const qDim = s.numHeads * s.headDim;
  const kvDim = s.numKvHeads * s.headDim;
  const r = (n: number) => rng.uniforms(n, 0.02);
  const ones = () => new Float32Array(D).fill(1);
  return {
    embed: r(s.vocabSize * D),
    layers: Array.from({ length: s.numLayers }, () => ({
      inputNorm: ones(),
      q: r(D * qDim),
      k: r(D * kvDim),
      v: r(D * kvDim),
      o: r(qDim * D),
      postNorm: ones(),
      gate: r(D * s.intermediateSize),
      up: r(D * s.intermediateSize),
      down: r(s.intermediateSize * D),
    })),
    finalNorm: ones(),
  };
}

export function generate(outDir: string): Promise<void> {
  return writeBenchModel(outDir, (["fp32", "q8", "q4"] as const).map((dtype) => ({ dtype })), true);
}

/**
 * The same weights in the fused layout of onnxruntime-genai's model builder (`-ONNX-GQA` repos), in its CPU
 * form: packed QKV with the rotary embedding inside GroupQueryAttention, gate and up in one MatMulNBits.
 */
export const gqa = {
  VERSION: "smollm2-135m-gqa-3",
  generate: (outDir: string) =>
    writeBenchModel(
      outDir,
      (["fp16", "q8", "q4", "q4f16"] as const).map((dtype) => ({
        dtype,
        attention: "fused",
        packed: true,
        logitsToKeep: true,
      })),
      false,
    ),
};

/**
 * The same weights in the other layouts real repos ship, at the real size: fp16 weights with an fp16 KV cache
 * and logits (`model_fp16.onnx`), q4 with its weights in an external `model_q4.onnx_data` (declared in
 * config.json as onnx-community repos do), and an older merged decoder (`decoder_model_merged_quantized.onnx`,
 * q8, with use_cache_branch and num_logits_to_keep), which the server finds because the folder has no
 * `model_quantized.onnx`.
 */
export const layouts = {
  VERSION: "smollm2-135m-layouts-1",
  generate: (outDir: string) =>
    writeBenchModel(
      outDir,
      [
        { dtype: "fp16" },
        { dtype: "q4", external: true },
        { dtype: "q8", fileName: "decoder_model_merged", cacheBranch: true, logitsToKeep: true },
      ],
      false,
      { "transformers.js_config": { use_external_data_format: { "model_q4.onnx": 1 } } },
    ),
};

async function writeBenchModel(
  outDir: string,
  layouts: DecoderLayout[],
  gguf: boolean,
  config: Record<string, unknown> = {},
): Promise<void> {
  const s = SMOLLM2_SHAPE;
  const { vocab, merges } = smolVocab(s.vocabSize);
  await Deno.mkdir(join(outDir, "onnx"), { recursive: true });
  await writeByteLevelTokenizer(outDir, {
    vocab,
    merges,
    added: SPECIALS.map((content) => ({ content, special: true })),
    addedAtStart: true,
    config: {
      additional_special_tokens: ["<|im_start|>", "<|im_end|>"],
      bos_token: "<|im_start|>",
      chat_template: SMOLLM2_CHAT_TEMPLATE,
      clean_up_tokenization_spaces: false,
      eos_token: "<|im_end|>",
      model_max_length: 8192,
      pad_token: "<|im_end|>",
      tokenizer_class: "GPT2Tokenizer",
      unk_token: "<|endoftext|>",
      vocab_size: s.vocabSize,
    },
  });
  await writeJson(
    outDir,
    "config.json",
    decoderConfig(s, "llama", {
      attention_bias: false,
      bos_token_id: 1,
      eos_token_id: 2,
      initializer_range: 0.041666666666666664,
      is_llama_config: true,
      max_position_embeddings: 8192,
      mlp_bias: false,
      pad_token_id: 2,
      pretraining_tp: 1,
      rope_interleaved: false,
      ...config,
    }),
  );
  await writeJson(outDir, "generation_config.json", {
    bos_token_id: 1,
    eos_token_id: 2,
    pad_token_id: 2,
    transformers_version: "4.45.0",
  });
  const weights = randomWeights(s, new Prng("smollm2-135m-bench"));
  for (const layout of layouts) await writeDecoderLayout(outDir, s, weights, layout, 8192);
  if (!gguf) return;
  // The same weights as GGUF Q8_0 and Q4_0 for the llama.cpp backend and its benchmark.
  const tokenizer = bpeTokenizerMeta(JSON.parse(await Deno.readTextFile(join(outDir, "tokenizer.json"))));
  await Deno.mkdir(join(outDir, "gguf"), { recursive: true });
  for (const type of ["Q8_0", "Q4_0"] as const) {
    await Deno.writeFile(
      join(outDir, "gguf", `smollm2-135m-${type}.gguf`),
      decoderGguf({
        arch: "llama",
        name: "smollm2-135m-bench",
        shape: s,
        weights,
        type,
        contextLength: 8192,
        tokenizer,
        bosId: 1,
        eosId: 2,
        padId: 2,
        chatTemplate: SMOLLM2_CHAT_TEMPLATE,
      }),
    );
  }
}
