// Owns where a chat model's files come from: a local folder (manifest `path`) or a Hugging Face repo whose
// files live in the models folder (manifest `repo`, under models/hub/<owner>/<name>). Checks what is missing
// before loading, refuses to download when remote loading is off (ModelFilesMissing says what is missing and
// how to get it), and shows downloads as terminal progress bars.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { ModelFilesMissing } from "../../errors.ts";
import { type FileProgress, terminalProgress } from "../../hub/progress.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import type { Logger } from "../../log.ts";
import { DTYPE_SUFFIX, knownDtype } from "../../hub/dtypes.ts";

export { knownDtype };

/** The files a causal LM needs for a dtype (model file name overridable by the manifest's options). */
export function requiredChatFiles(dtype: string, modelFileName = "model"): string[] {
  return [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    `onnx/${modelFileName}${DTYPE_SUFFIX[dtype] ?? ""}.onnx`,
  ];
}

export interface ChatSource {
  /** What to hand to from_pretrained: the local folder, or the repo id when downloading. */
  id: string;
  /** The folder the files are (or will be) in. */
  dir: string;
  /** Set when files will be downloaded: the cache root that maps repo files into `dir`. */
  cacheDir?: string;
}

/**
 * Decides how to load an entry. Local folders must be complete. Hub entries load from their folder when
 * complete; otherwise they are downloaded into it when remote loading is allowed, else ModelFilesMissing.
 */
export function resolveChatSource(entry: ModelEntry, ctx: LoadContext, files: string[]): ChatSource {
  const missing = files.filter((f) => !existsSync(join(entry.path, f)));
  if (missing.length === 0) return { id: entry.path, dir: entry.path };
  if (entry.repo && ctx.allowRemote) {
    // entry.path is <modelsDir>/hub/<owner>/<name>: transformers.js's file cache keyed "<owner>/<name>/<file>"
    // under <modelsDir>/hub writes exactly there.
    const cacheDir = dirname(dirname(entry.path));
    return { id: entry.repo, dir: entry.path, cacheDir };
  }
  throw new ModelFilesMissing(missingMessage(entry, missing, ctx.allowRemote));
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

export interface ProgressInfo {
  status: string;
  file?: string;
  loaded?: number;
  total?: number;
}

/**
 * A progress_callback for transformers.js. On a terminal: one cli-progress bar per downloaded file on stderr.
 * Elsewhere (containers, log collectors) bars would be noise: one log line when a file starts and one when it
 * is complete. (cli-progress itself can't be left to decide: off a terminal it still prints half-formatted
 * bars when stopped.)
 */
export function downloadProgress(
  model: string,
  log: Logger,
  terminal = Deno.stderr.isTerminal(),
): { callback: (p: ProgressInfo) => void; stop(): void } {
  // The same display as every other download (hub/progress.ts): bars on a terminal, one line per file else.
  const sink = terminalProgress(terminal, (line) => log.info(line, { model }));
  const files = new Map<string, FileProgress>();
  return {
    callback(p) {
      if (p.status !== "progress" || !p.file || !p.total) return;
      let file = files.get(p.file);
      if (!file) files.set(p.file, file = sink.begin(`${model} ${p.file}`, p.total));
      file.update(p.loaded ?? 0);
      if ((p.loaded ?? 0) >= p.total) {
        file.finish("downloaded");
        files.delete(p.file);
      }
    },
    stop() {
      for (const file of files.values()) file.fail();
      files.clear();
    },
  };
}
