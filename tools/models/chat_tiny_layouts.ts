// Owns chat-tiny in the ONNX layouts beside its own folder's (decomposed attention, every dtype): the same
// crafted weights and tokenizer, so each must give chat-tiny's exact replies.
//   - chat-tiny-gqa: onnxruntime-genai's fused operators (GroupQueryAttention, RotaryEmbedding,
//     SkipSimplifiedLayerNormalization, MatMulNBits), as `-ONNX-GQA` repos ship them, with num_logits_to_keep;
//   - chat-tiny-gqa-packed: the same with the model builder's CPU packing (one q/k/v MatMulNBits feeding
//     GroupQueryAttention as packed QKV with the rotary embedding inside it, gate and up in one MatMulNBits);
//   - chat-tiny-split: weights in `model*.onnx_data` beside the graphs, declared in config.json's
//     `transformers.js_config.use_external_data_format` as onnx-community repos do;
//   - chat-tiny-merged: `decoder_model_merged*.onnx` with `use_cache_branch` and num_logits_to_keep.
import type { Generator } from "../ensure_models.ts";
import { chatTinySpec, writeCraftedDecoder } from "./chat_tiny.ts";
import type { DecoderLayout } from "./decoder_layouts.ts";

const VERSION = "chat-tiny-layouts-1";

function variant(layouts: DecoderLayout[], config: Record<string, unknown> = {}): Generator {
  return {
    VERSION,
    generate: (outDir) => writeCraftedDecoder(outDir, { ...chatTinySpec(), layouts, gguf: false, config }),
  };
}

const GQA_DTYPES = ["fp32", "fp16", "q8", "q4", "q4f16"] as const;
const SPLIT_DTYPES = ["fp32", "q4"] as const;

export const CHAT_TINY_VARIANTS: Record<string, Generator> = {
  "chat-tiny-gqa": variant(GQA_DTYPES.map((dtype) => ({ dtype, attention: "fused", logitsToKeep: true }))),
  "chat-tiny-gqa-packed": variant(
    GQA_DTYPES.map((dtype) => ({ dtype, attention: "fused", packed: true, logitsToKeep: true })),
  ),
  "chat-tiny-split": variant(
    SPLIT_DTYPES.map((dtype) => ({ dtype, external: true })),
    {
      "transformers.js_config": {
        use_external_data_format: { "model.onnx": 1, "model_q4.onnx": 1 },
      },
    },
  ),
  "chat-tiny-merged": variant(
    (["fp32", "q4"] as const).map((dtype) => ({
      dtype,
      fileName: "decoder_model_merged",
      cacheBranch: true,
      logitsToKeep: true,
    })),
  ),
};
