// Owns `list`: the manifest's models as the server sees them (parsed by the server's own loader), with task,
// source, whether the files a model needs are on disk, and how much disk it takes.
import { join, relative } from "node:path";
import type { Config } from "../config.ts";
import { loadManifest } from "../engines/manifest.ts";
import type { ModelEntry } from "../engines/types.ts";
import { backendOf } from "../engines/backends.ts";
import { formatBytes } from "../hub/progress.ts";
import { DTYPE_SUFFIX, onnxWeight } from "../hub/select.ts";

export interface ListRow {
  id: string;
  task: string;
  /** hub repo id, or the local path relative to the models folder. */
  source: string;
  dtype?: string;
  file?: string;
  /** yes: what the model needs is there; partial: some of it, or an unfinished download; no: nothing. */
  local: "yes" | "partial" | "no";
  bytes: number;
  isDefault: boolean;
  aliases: string[];
  /** What was measured: the model's folder, or its ggml file. */
  localPath: string;
}

async function statOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return null;
    throw e;
  }
}

/** Every file under `dir` (relative POSIX paths) with its size. */
async function walk(dir: string, prefix = ""): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const e of Deno.readDir(dir)) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory) { for (const [k, v] of await walk(join(dir, e.name), rel)) out.set(k, v); }
    else if (e.isFile) out.set(rel, (await Deno.stat(join(dir, e.name))).size);
  }
  return out;
}

async function inspect(entry: ModelEntry): Promise<Pick<ListRow, "local" | "bytes" | "file" | "localPath">> {
  const st = await statOrNull(entry.path);
  if (!st) return { local: "no", bytes: 0, localPath: entry.path };
  const layout = backendOf(entry.engine).layout;
  if (layout.kind === "file") {
    // A whisper or GGUF model is one file: the entry's options.file inside the folder, or the path itself.
    const named = typeof entry.options.file === "string" ? entry.options.file : undefined;
    let file = st.isFile ? entry.path : named ? join(entry.path, named) : undefined;
    if (!file && st.isDirectory) {
      const ggml = [...(await walk(entry.path)).keys()].find((p) => layout.pattern.test(p));
      file = ggml ? join(entry.path, ggml) : undefined;
    }
    const shown = file ? relative(entry.path, file) || undefined : named;
    const fst = file ? await statOrNull(file) : null;
    const localPath = file ?? entry.path;
    if (fst?.isFile) return { local: "yes", bytes: fst.size, file: shown, localPath };
    const part = file ? await statOrNull(`${file}.part`) : null;
    return { local: part ? "partial" : "no", bytes: part?.size ?? 0, file: shown, localPath };
  }
  if (!st.isDirectory) return { local: "partial", bytes: st.size, localPath: entry.path };
  const files = await walk(entry.path);
  const bytes = [...files.values()].reduce((a, b) => a + b, 0);
  const weights = [...files.keys()].map(onnxWeight).filter((w) => w !== undefined);
  const dtype = entry.dtype && entry.dtype in DTYPE_SUFFIX ? entry.dtype : undefined;
  const hasWeights = weights.some((w) => dtype === undefined || w.dtype === dtype);
  const unfinished = [...files.keys()].some((p) => p.endsWith(".part"));
  const tokenizer = files.has("tokenizer.json") || files.has("tokenizer_config.json");
  const complete = files.has("config.json") && tokenizer && hasWeights && !unfinished;
  return { local: complete ? "yes" : files.size > 0 ? "partial" : "no", bytes, localPath: entry.path };
}

export async function listRows(config: Config): Promise<ListRow[]> {
  const m = await loadManifest(config.manifest, config.modelsDir, config.device);
  const rows: ListRow[] = [];
  for (const entry of m.entries.values()) {
    const state = await inspect(entry);
    rows.push({
      id: entry.id,
      task: entry.task,
      source: entry.repo ?? relative(config.modelsDir, entry.path),
      dtype: entry.dtype,
      ...state,
      isDefault: m.defaults[entry.task] === entry.id,
      aliases: [...m.aliases].filter(([, id]) => id === entry.id).map(([a]) => a).sort(),
    });
  }
  return rows;
}

/** A plain text table; `*` marks each task's default model. */
export function formatTable(rows: ListRow[]): string[] {
  const header = ["ID", "TASK", "SOURCE", "LOCAL", "SIZE"];
  const cells = rows.map((r) => [
    `${r.id}${r.isDefault ? " *" : ""}`,
    r.task,
    `${r.source}${r.dtype ? ` (${r.dtype})` : ""}${r.file ? ` ${r.file}` : ""}`,
    r.local,
    r.bytes ? formatBytes(r.bytes) : "-",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]))).join("  ");
  // Entries sharing a folder (two dtypes of one repo) are counted once.
  const total = [...new Map(rows.map((r) => [r.localPath, r.bytes])).values()].reduce((a, b) => a + b, 0);
  return [
    line(header),
    ...cells.map(line),
    "",
    `${rows.length} model${rows.length === 1 ? "" : "s"}, ${
      formatBytes(total)
    } on disk; * = default for its task`,
  ];
}
