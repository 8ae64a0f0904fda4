// Owns the chat-tiny generator: a 2-layer Qwen2-architecture decoder with crafted weights (see
// chat_tiny_weights.ts) whose greedy replies are fixed by marker words in the prompt (see chat_tiny_vocab.ts
// and README.md), in the onnx-community folder layout, as ONNX files in every dtype (decoder_layouts.ts), and as
// F32 and Q8_0 GGUF files (gguf/) for the llama.cpp backend.
import { join } from "node:path";
import { type AddedToken, type Merge, writeByteLevelTokenizer } from "./bpe_tokenizer.ts";
import { craftChatTinyWeights } from "./chat_tiny_weights.ts";
import {
  ADDED_TOKENS,
  buildChatTinyVocab,
  ENDOFTEXT,
  IM_END,
  MARKER_MODES,
  type ReplyChain,
} from "./chat_tiny_vocab.ts";
import { QWEN25_CHAT_TEMPLATE } from "./chat_templates.ts";
import { decoderConfig, type DecoderShape } from "./decoder_graph.ts";
import { writeJson } from "./model_files.ts";
import { Prng } from "./prng.ts";
import { bpeTokenizerMeta, decoderGguf, type GgmlType } from "./gguf_writer.ts";
import { type DecoderLayout, writeDecoderLayout } from "./decoder_layouts.ts";

export const VERSION = "chat-tiny-4";
export const CHAT_TINY_CONTEXT = 1024;
/** chat-tiny's own folder: the decomposed (optimum) layout in every dtype transformers.js knows for it. */
const DTYPES = ["fp32", "fp16", "q8", "int8", "q4", "q4f16", "bnb4"] as const;
export const CHAT_TINY_LAYOUTS: DecoderLayout[] = DTYPES.map((dtype) => ({ dtype }));
const GGUF_TYPES: GgmlType[] = ["F32", "Q8_0"];

export function generate(outDir: string): Promise<void> {
  return writeCraftedDecoder(outDir, { ...chatTinySpec(), layouts: CHAT_TINY_LAYOUTS });
}

/** chat-tiny's vocabulary, markers and replies; the layouts and side files are the caller's. */
export function chatTinySpec(): CraftedDecoderSpec {
  const v = buildChatTinyVocab();
  const modes = MARKER_MODES.map((m) => m.mode);
  return {
    name: "chat-tiny",
    seed: "chat-tiny",
    vocab: v.vocab,
    merges: v.merges,
    added: ADDED_TOKENS,
    chatTemplate: QWEN25_CHAT_TEMPLATE,
    markers: modes.map((m) => v.markers[m]),
    scores: MARKER_MODES.map((m) => m.score),
    chains: [...modes, "default" as const].map((m) => v.chains[m]),
  };
}

/** A crafted decoder's behaviour and tokenizer: marker tokens per mode, one reply chain per mode plus the
 * default one last (tokens as vocabulary strings or added-token contents). */
export interface CraftedDecoderSpec {
  name: string;
  seed: string;
  vocab: string[];
  merges: Merge[];
  added: AddedToken[];
  chatTemplate: string;
  markers: string[][];
  scores: number[];
  chains: ReplyChain[];
  /** The ONNX files to write (default: fp32, q8 and q4 in the decomposed layout). */
  layouts?: DecoderLayout[];
  /** Also the F32 and Q8_0 GGUF files (default true). */
  gguf?: boolean;
  /** Extra config.json fields (a repo's `transformers.js_config`). */
  config?: Record<string, unknown>;
  /** Context window in tokens (default CHAT_TINY_CONTEXT): positions of the ONNX graphs, GGUF context_length. */
  contextLength?: number;
}

/** Writes tokenizer, config and the crafted weights in the ONNX layouts asked for and as F32/Q8_0 GGUF (gguf/). */
export async function writeCraftedDecoder(outDir: string, spec: CraftedDecoderSpec): Promise<void> {
  const context = spec.contextLength ?? CHAT_TINY_CONTEXT;
  await Deno.mkdir(join(outDir, "onnx"), { recursive: true });
  const ids = await writeByteLevelTokenizer(outDir, {
    vocab: spec.vocab,
    merges: spec.merges,
    added: spec.added,
    config: {
      additional_special_tokens: ["<|im_start|>", "<|im_end|>"],
      bos_token: null,
      chat_template: spec.chatTemplate,
      clean_up_tokenization_spaces: false,
      eos_token: IM_END,
      errors: "replace",
      model_max_length: context,
      pad_token: ENDOFTEXT,
      split_special_tokens: false,
      tokenizer_class: "Qwen2Tokenizer",
      unk_token: null,
    },
  });
  const id = (t: string) => {
    const i = ids.get(t);
    if (i === undefined) throw new Error(`${spec.name}: no token ${JSON.stringify(t)}`);
    return i;
  };
  const shape: DecoderShape = {
    vocabSize: spec.vocab.length + spec.added.length,
    hiddenSize: 128,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 32,
    intermediateSize: 256,
    ropeTheta: 1e6,
    rmsNormEps: 1e-6,
    attentionBias: true,
    tieWordEmbeddings: false,
  };
  const eos = [id(IM_END), id(ENDOFTEXT)];
  await writeJson(
    outDir,
    "config.json",
    decoderConfig(shape, "qwen2", {
      bos_token_id: id(ENDOFTEXT),
      eos_token_id: id(IM_END),
      max_position_embeddings: context,
      max_window_layers: shape.numLayers,
      sliding_window: context,
      use_sliding_window: false,
      ...spec.config,
    }),
  );
  // Greedy by default (Qwen2.5 ships sampling defaults; a test model should be predictable unless asked).
  await writeJson(outDir, "generation_config.json", {
    bos_token_id: id(ENDOFTEXT),
    do_sample: false,
    eos_token_id: eos,
    pad_token_id: id(ENDOFTEXT),
    transformers_version: "4.45.0",
  });
  const weights = craftChatTinyWeights(shape, {
    markerIds: spec.markers.map((ms) => ms.map(id)),
    scores: spec.scores,
    chains: spec.chains.map((c) => ({ ids: c.tokens.map(id), loopTo: c.loopTo })),
    eosId: id(IM_END),
  }, new Prng(spec.seed));
  const layouts = spec.layouts ?? [{ dtype: "fp32" }, { dtype: "q8" }, { dtype: "q4" }];
  for (const layout of layouts) await writeDecoderLayout(outDir, shape, weights, layout, context);
  if (spec.gguf === false) return;
  // The same weights and tokenizer as GGUF for the llama.cpp backend (gguf/ beside the ONNX files).
  const tokenizer = bpeTokenizerMeta(JSON.parse(await Deno.readTextFile(join(outDir, "tokenizer.json"))));
  await Deno.mkdir(join(outDir, "gguf"), { recursive: true });
  for (const type of GGUF_TYPES) {
    await Deno.writeFile(
      join(outDir, "gguf", `${spec.name}-${type}.gguf`),
      decoderGguf({
        arch: "qwen2",
        name: spec.name,
        shape,
        weights,
        type,
        contextLength: context,
        tokenizer,
        bosId: id(ENDOFTEXT),
        eosId: id(IM_END),
        padId: id(ENDOFTEXT),
        chatTemplate: spec.chatTemplate,
        // Greedy by default, as the ONNX export's generation_config says.
        temperature: 0,
      }),
    );
  }
}
