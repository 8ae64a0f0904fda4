// Owns where a llama.cpp model's one GGUF file is: the manifest path itself, or options.file in its folder.
// Light on purpose: the manifest, the memory estimate and `list` read it without loading the engine.
import { join } from "node:path";
import { ModelFilesMissing } from "../../errors.ts";
import type { ModelEntry } from "../types.ts";

/** The GGUF file of an entry: `path` itself when it is a .gguf file, else `<path>/<options.file>`. */
export function ggufFile(entry: ModelEntry): string {
  if (entry.path.endsWith(".gguf")) return entry.path;
  const file = entry.options.file;
  if (typeof file !== "string" || !file.endsWith(".gguf")) {
    throw new ModelFilesMissing(
      `model \`${entry.id}\`: a llama.cpp model needs a .gguf file: a manifest "path" to it, or "options": ` +
        `{ "file": "<name>.gguf" } beside "repo" or a folder "path"`,
    );
  }
  if (file.split("/").includes("..")) throw new ModelFilesMissing(`model \`${entry.id}\`: bad file name`);
  return join(entry.path, ...file.split("/"));
}
