// Owns the small JSON side files of a Hugging Face model folder (config, sentence-transformers modules)
// written with a stable key order and a trailing newline so regenerated folders are byte-identical.
import { dirname, join } from "node:path";

export async function writeJson(dir: string, relPath: string, value: unknown): Promise<void> {
  const path = join(dir, relPath);
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(value, null, 2) + "\n");
}

/** sentence-transformers layout: Transformer -> mean Pooling -> Normalize, as all-MiniLM-L6-v2 ships it. */
export async function writeSentenceTransformerFiles(
  dir: string,
  hiddenSize: number,
  maxSeqLength: number,
): Promise<void> {
  await writeJson(dir, "modules.json", [
    { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
    { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
    { idx: 2, name: "2", path: "2_Normalize", type: "sentence_transformers.models.Normalize" },
  ]);
  await writeJson(dir, "1_Pooling/config.json", {
    word_embedding_dimension: hiddenSize,
    pooling_mode_cls_token: false,
    pooling_mode_mean_tokens: true,
    pooling_mode_max_tokens: false,
    pooling_mode_mean_sqrt_len_tokens: false,
    pooling_mode_weightedmean_tokens: false,
    pooling_mode_lasttoken: false,
    include_prompt: true,
  });
  // Normalize has no parameters; the folder exists because modules.json points at it.
  await Deno.mkdir(join(dir, "2_Normalize"), { recursive: true });
  await writeJson(dir, "sentence_bert_config.json", { max_seq_length: maxSeqLength, do_lower_case: false });
  await writeJson(dir, "config_sentence_transformers.json", {
    __version__: { sentence_transformers: "3.0.1", transformers: "4.44.0", pytorch: "2.4.0" },
    prompts: {},
    default_prompt_name: null,
    similarity_fn_name: "cosine",
  });
}
