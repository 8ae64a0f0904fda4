// Owns where an embedding model's files are and what the folder says about the model: which folder to load
// from (downloading missing files of a hub repo first, when allowed), which files are missing (for a ModelFilesMissing message that
// says how to get them), the sentence-transformers pooling definition and the maximum input length.
import { join, sep } from "node:path";
import type { ModelEntry } from "../types.ts";
import { ModelFilesMissing } from "../../errors.ts";
import type { HubOptions } from "../../hub/client.ts";
import { fetchRepoFiles } from "../../hub/fetch_files.ts";
import { DTYPE_SUFFIX } from "../../hub/dtypes.ts";
import { DEFAULT_POOLING, poolingFromModules, type PoolingSpec, type StModule } from "./embedding_pooling.ts";

/**
 * The ONNX file's base name: the manifest's `options.model_file_name` (e.g. "model_O2", an encoder with
 * onnxruntime's fused operators as sentence-transformers ships it), else "model" as transformers.js names it.
 */
export function embeddingModelFileName(entry: ModelEntry): string {
  const name = entry.options.model_file_name;
  return typeof name === "string" && name !== "" ? name : "model";
}

/** Files without which the model cannot load, relative to its folder. */
export function requiredFiles(dtype: string | undefined, fileName = "model"): string[] {
  const suffix = DTYPE_SUFFIX[dtype ?? "fp32"];
  const onnx = suffix === undefined ? [] : [`onnx/${fileName}${suffix}.onnx`];
  return ["config.json", "tokenizer.json", "tokenizer_config.json", ...onnx];
}

/** Small sentence-transformers files that define pooling; optional. */
export const POOLING_FILES = ["modules.json", "1_Pooling/config.json"];

export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The local folder of an entry's files: `entry.path`, or `<entry.path>/<repo>` for a hub entry given a root. */
export function localDir(entry: ModelEntry): string {
  if (!entry.repo) return entry.path;
  const suffix = sep + entry.repo.split("/").join(sep);
  if (entry.path.endsWith(suffix)) return entry.path;
  // A hub entry with its own path: files sit right there, or under it in the repo's own folder.
  if (exists(join(entry.path, "config.json"))) return entry.path;
  return join(entry.path, ...entry.repo.split("/"));
}

/**
 * Makes sure the entry's files are local and returns their folder. A hub entry with files missing downloads
 * them (plus the sentence-transformers pooling files the repo has) through the hub's one download path, only
 * when `allowRemote`; otherwise ModelFilesMissing names the missing files and how to get them.
 */
export async function ensureEmbeddingFiles(
  entry: ModelEntry,
  allowRemote: boolean,
  opts: { hub?: HubOptions; log?: (line: string) => void } = {},
): Promise<string> {
  const dir = localDir(entry);
  const required = requiredFiles(entry.dtype, embeddingModelFileName(entry));
  const missing = () => required.filter((f) => !exists(join(dir, f)));
  if (missing().length === 0) return dir;
  if (!entry.repo || !allowRemote) {
    throw new ModelFilesMissing(missingMessage(entry, dir, missing(), allowRemote));
  }
  try {
    await fetchRepoFiles({
      repo: entry.repo,
      dir,
      required,
      optional: (f) => POOLING_FILES.includes(f.path) || /^\d+_Pooling\/config\.json$/.test(f.path),
      hub: opts.hub,
      log: opts.log,
    });
  } catch (e) {
    throw new ModelFilesMissing(`${missingMessage(entry, dir, missing(), true)} (${(e as Error).message})`);
  }
  return dir;
}

export function missingMessage(
  entry: ModelEntry,
  dir: string,
  missing: string[],
  allowRemote: boolean,
): string {
  const what = `embedding model \`${entry.id}\` is missing ${missing.join(", ")} in ${dir}`;
  if (entry.repo) {
    return allowRemote
      ? `${what}: they could not be downloaded from ${entry.repo}`
      : `${what}: run \`deno task pull ${entry.id}\`, or start the server once without --offline to ` +
        `download them from the hub repo ${entry.repo}, or copy that repo's files there`;
  }
  return `${what}: put a transformers.js export of the model there (config.json, tokenizer files and ` +
    `onnx/model*.onnx), or give the entry a "repo" to download from` +
    (dir.includes("generated") ? "; the test models come from `deno task models:test`" : "");
}

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(Deno.readTextFileSync(path));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`${path} is not valid JSON: ${(e as Error).message}`);
  }
}

/** The pooling the model defines (sentence-transformers files), or mean + L2 when it defines none. */
export function readPooling(dir: string, override?: unknown): PoolingSpec {
  const modules = readJson(join(dir, "modules.json")) as unknown;
  let spec = DEFAULT_POOLING;
  if (Array.isArray(modules)) {
    spec = poolingFromModules(modules as StModule[], (folder) => readJson(join(dir, folder, "config.json")));
  } else {
    // Some exports ship only the Pooling folder: its modes are the model's own; with no modules.json there is
    // no record of a Normalize step, so the default (normalized) stays.
    const cfg = readJson(join(dir, "1_Pooling", "config.json"));
    if (cfg) {
      spec = poolingFromModules([{ type: "Pooling", path: "1_Pooling" }, { type: "Normalize" }], () => cfg);
    }
  }
  // A manifest `options.pooling` ("mean" | "cls" | ...) overrides what the files say.
  if (typeof override === "string") {
    spec = poolingFromModules(
      [{ type: "Pooling", path: "" }, ...(spec.normalize ? [{ type: "Normalize" }] : [])],
      () => ({ pooling_mode: override }),
    );
    spec = { ...spec, source: "manifest" };
  }
  return spec;
}

/**
 * Longest input in tokens: the smaller of the tokenizer's model_max_length and the position table's size
 * (ignoring the "no limit" sentinel tokenizers use).
 */
export function maxTokensOf(tokenizerMax: number | undefined, positions: number | undefined): number {
  const limits = [tokenizerMax, positions].filter((n): n is number =>
    typeof n === "number" && Number.isFinite(n) && n > 0 && n < 1e9
  );
  return limits.length ? Math.min(...limits) : 512;
}
