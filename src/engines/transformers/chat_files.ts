// Owns where a chat model's files come from: a local folder (manifest `path`) or a Hugging Face repo whose
// files live in the models folder (manifest `repo`, under models/hub/<owner>/<name>). Checks what is missing
// before loading, downloads it through the hub's one download path, or refuses when remote loading is off
// (ModelFilesMissing says what is missing and how to get it).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ModelFilesMissing } from "../../errors.ts";
import { fetchRepoFiles } from "../../hub/fetch_files.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import { DTYPE_SUFFIX, knownDtype } from "../../hub/dtypes.ts";

export { knownDtype };

/**
 * The ONNX file's base name: the manifest's `options.model_file_name`; else "model" (as transformers.js), or
 * "decoder_model_merged" for a folder that has only an older merged decoder (optimum's export) in the dtype.
 */
export function chatModelFileName(entry: ModelEntry): string {
  if (typeof entry.options.model_file_name === "string") return entry.options.model_file_name;
  const suffix = DTYPE_SUFFIX[entry.dtype ?? "fp32"] ?? "";
  const has = (base: string) => existsSync(join(entry.path, "onnx", `${base}${suffix}.onnx`));
  return !has("model") && has(MERGED_DECODER) ? MERGED_DECODER : "model";
}

const MERGED_DECODER = "decoder_model_merged";

/** The files a causal LM needs for a dtype (model file name overridable by the manifest's options). */
export function requiredChatFiles(dtype: string, modelFileName = "model"): string[] {
  return [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    `onnx/${modelFileName}${DTYPE_SUFFIX[dtype] ?? ""}.onnx`,
  ];
}

/**
 * Makes sure an entry's files are in its folder. Local folders must be complete. A hub entry with files
 * missing downloads them through the hub's one download path when remote loading is allowed (with the
 * generation defaults and external-data files the repo has), else ModelFilesMissing says what is missing.
 */
export async function ensureChatFiles(entry: ModelEntry, ctx: LoadContext, files: string[]): Promise<void> {
  const missing = () => files.filter((f) => !existsSync(join(entry.path, f)));
  if (missing().length === 0) return;
  if (!entry.repo || !ctx.allowRemote) {
    throw new ModelFilesMissing(missingMessage(entry, missing(), ctx.allowRemote));
  }
  const onnx = files.filter((f) => f.endsWith(".onnx"));
  ctx.log.info("downloading model files", { model: entry.id, repo: entry.repo });
  try {
    await fetchRepoFiles({
      repo: entry.repo,
      dir: entry.path,
      required: files,
      optional: (f) =>
        ["generation_config.json", "special_tokens_map.json"].includes(f.path) ||
        onnx.some((o) => f.path.startsWith(`${o}_data`)),
      hub: ctx.hub,
      log: (line) => ctx.log.info(line, { model: entry.id }),
    });
  } catch (e) {
    throw new ModelFilesMissing(`${missingMessage(entry, missing(), true)} (${(e as Error).message})`);
  }
}

export function missingMessage(entry: ModelEntry, missing: string[], allowRemote: boolean): string {
  const what = `the model files ${missing.map((f) => `'${f}'`).join(", ")} are missing in ${entry.path}`;
  if (entry.repo) {
    return `${what}. ${
      allowRemote ? "The download from" : "Remote downloads are off (--offline); fetch them from"
    } ` +
      `https://huggingface.co/${entry.repo} ` +
      `${allowRemote ? "did not provide them" : "by starting once without --offline"} ` +
      `or copy them into that folder.`;
  }
  return `${what}. Put a Hugging Face-layout model there (config.json, tokenizer files, onnx/model*.onnx)` +
    (entry.path.includes("generated") ? " or run `deno task models:test` to generate the test models." : ".");
}
