// Owns where a whisper.cpp model's one ggml file is. Light on purpose: the memory estimate and `list` read it
// without loading the engine.
import { join } from "node:path";
import { ModelFilesMissing } from "../../errors.ts";
import type { ModelEntry } from "../types.ts";

export async function exists(p: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(p);
  } catch {
    return undefined;
  }
}

/** The model file of an entry: its path when that is a file, else `options.file` (or the only .bin) inside. */
export async function modelFile(entry: ModelEntry): Promise<string> {
  const info = await exists(entry.path);
  if (!info) {
    throw new ModelFilesMissing(
      `model file ${entry.path} is missing: put a ggml whisper model there (the project's test model is made ` +
        "by `deno task models:test`)",
    );
  }
  if (info.isFile) return entry.path;
  const named = typeof entry.options.file === "string" ? entry.options.file : undefined;
  if (named) {
    const p = join(entry.path, named);
    if (await exists(p)) return p;
    throw new ModelFilesMissing(`model file ${p} is missing`);
  }
  const bins: string[] = [];
  for await (const e of Deno.readDir(entry.path)) if (e.isFile && e.name.endsWith(".bin")) bins.push(e.name);
  if (bins.length !== 1) {
    throw new ModelFilesMissing(
      `${entry.path} holds ${bins.length} .bin files; name the model with options.file in the manifest`,
    );
  }
  return join(entry.path, bins[0]);
}
