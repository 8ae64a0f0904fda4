// Owns where an embedding model's files are and what the folder says about the model: which folder (or hub
// repo, when downloading is allowed) to load from, which files are missing (for a ModelFilesMissing message that
// says how to get them), the sentence-transformers pooling definition and the maximum input length.
import { join, sep } from "node:path";
import type { ModelEntry } from "../types.ts";
import { ModelFilesMissing } from "../../errors.ts";
import { DTYPE_SUFFIX } from "../../hub/dtypes.ts";
import { DEFAULT_POOLING, poolingFromModules, type PoolingSpec, type StModule } from "./embedding_pooling.ts";

/** Files without which the model cannot load, relative to its folder. */
export function requiredFiles(dtype: string | undefined): string[] {
  const suffix = DTYPE_SUFFIX[dtype ?? "fp32"];
  const onnx = suffix === undefined ? [] : [`onnx/model${suffix}.onnx`];
  return ["config.json", "tokenizer.json", "tokenizer_config.json", ...onnx];
}

/** Small sentence-transformers files that define pooling; optional. */
export const POOLING_FILES = ["modules.json", "1_Pooling/config.json"];

export interface ModelSource {
  /** What to hand to from_pretrained: the local folder, or the repo id while downloading. */
  id: string;
  /** The folder that holds (or will hold) the files. */
  dir: string;
  /** Download cache root such that `<cacheDir>/<repo>` is `dir`; set only when downloading. */
  cacheDir?: string;
}

export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The local folder of an entry's files: `entry.path`, or `<entry.path>/<repo>` for a download root. */
export function localDir(entry: ModelEntry): { dir: string; cacheDir?: string } {
  if (!entry.repo) return { dir: entry.path };
  const suffix = sep + entry.repo.split("/").join(sep);
  if (entry.path.endsWith(suffix)) return { dir: entry.path, cacheDir: entry.path.slice(0, -suffix.length) };
  // A hub entry with its own path: files sit right there, or under it in the repo's own folder.
  if (exists(join(entry.path, "config.json"))) return { dir: entry.path };
  return { dir: join(entry.path, ...entry.repo.split("/")), cacheDir: entry.path };
}

/**
 * Where to load from. Local files win; a hub entry with missing files downloads only when `allowRemote`;
 * otherwise ModelFilesMissing names the missing files and how to get them.
 */
export function resolveSource(entry: ModelEntry, allowRemote: boolean): ModelSource {
  const { dir, cacheDir } = localDir(entry);
  const missing = requiredFiles(entry.dtype).filter((f) => !exists(join(dir, f)));
  if (missing.length === 0) return { id: dir, dir };
  if (entry.repo && allowRemote && cacheDir !== undefined) return { id: entry.repo, dir, cacheDir };
  throw new ModelFilesMissing(missingMessage(entry, dir, missing, allowRemote));
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

/**
 * Downloads the small sentence-transformers files (modules.json and the Pooling config) of a hub repo into
 * `dir`, best effort: transformers.js fetches only what it needs to run the graph, and these say how to pool.
 */
export async function fetchPoolingFiles(
  remoteHost: string,
  repo: string,
  dir: string,
  fetcher: typeof fetch = fetch,
): Promise<void> {
  const base = `${remoteHost.replace(/\/+$/, "")}/${repo}/resolve/main/`;
  const get = async (file: string): Promise<string | undefined> => {
    if (exists(join(dir, file))) return Deno.readTextFileSync(join(dir, file));
    const res = await fetcher(base + file);
    if (!res.ok) {
      await res.body?.cancel();
      return undefined;
    }
    const text = await res.text();
    JSON.parse(text); // never store an HTML error page as config
    await Deno.mkdir(join(dir, file, ".."), { recursive: true });
    await Deno.writeTextFile(join(dir, file), text);
    return text;
  };
  const modules = await get("modules.json");
  if (!modules) return;
  for (const m of JSON.parse(modules) as StModule[]) {
    if ((m.type ?? "").endsWith("Pooling") && m.path && !m.path.includes("..")) {
      await get(`${m.path}/config.json`);
    }
  }
}
