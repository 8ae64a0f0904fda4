// Owns the model manifest: its JSON shape (validated with zod), alias resolution, and the rule that no
// model can point outside the models folder. Produces ModelEntry values; loads nothing.
import { z } from "zod";
import { isAbsolute, relative, resolve } from "node:path";
import type { DevicePref, EngineKind, ModelEntry, Task } from "./types.ts";
import { ENGINE_KINDS, TASKS } from "../model_kinds.ts";
import { hubPath } from "../hub/paths.ts";
import { backendOf, BACKENDS } from "./backends.ts";

const REPO_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;
const MODEL_FILE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

const ModelSpec = z.object({
  task: z.enum(TASKS),
  /** Which backend runs it; by default the one that reads the model's files (see `defaultEngine`). */
  engine: z.enum(ENGINE_KINDS).optional(),
  repo: z.string().regex(REPO_ID, "must look like owner/name").refine((s) => !s.includes(".."), "no ..")
    .optional(),
  path: z.string().min(1).optional(),
  dtype: z.string().optional(),
  device: z.enum(["auto", "webgpu", "cpu"]).optional(),
  created: z.number().int().nonnegative().optional(),
  owned_by: z.string().optional(),
  options: z.record(z.string(), z.unknown()).optional(),
}).strict().refine((m) => m.repo || m.path, "needs repo or path").refine(
  // A base name inside the model's onnx/ folder (transformers.js appends the dtype suffix and .onnx).
  (m) => {
    const name = m.options?.model_file_name;
    return name === undefined || (typeof name === "string" && MODEL_FILE_NAME.test(name));
  },
  {
    message: "must be a file base name (letters, digits, . _ -; no folders)",
    path: ["options", "model_file_name"],
  },
).refine(
  // llama.cpp's layers on the GPU: -1 all that fit, 0 none (device: cpu also keeps it off the GPU).
  (m) => {
    const n = m.options?.gpu_layers;
    return n === undefined || (typeof n === "number" && Number.isInteger(n) && n >= -1);
  },
  {
    message: "must be an integer >= -1 (-1: all layers that fit on the GPU, 0: none)",
    path: ["options", "gpu_layers"],
  },
).refine(
  // llama.cpp's n_batch: tokens one llama_decode takes (llama-server's -b).
  (m) => {
    const n = m.options?.batch_size;
    return n === undefined || (typeof n === "number" && Number.isInteger(n) && n >= 32 && n <= 65536);
  },
  {
    message: "must be an integer from 32 to 65536 (tokens one llama_decode call takes)",
    path: ["options", "batch_size"],
  },
).refine(
  // llama.cpp: map the GGUF file (true) or read it into the runner's memory (false); unset, the runner decides.
  (m) => m.options?.mmap === undefined || typeof m.options.mmap === "boolean",
  { message: "must be true (map the file) or false (read it into memory)", path: ["options", "mmap"] },
);

const ManifestSchema = z.object({
  defaults: z.object({
    chat: z.string().optional(),
    embedding: z.string().optional(),
    transcription: z.string().optional(),
  }).strict().default({}),
  aliases: z.record(z.string(), z.string()).default({}),
  models: z.record(z.string(), ModelSpec),
}).strict();

export type ManifestJson = z.input<typeof ManifestSchema>;

export interface Manifest {
  entries: Map<string, ModelEntry>;
  /** alias -> model id, already resolved through `@task` defaults. */
  aliases: Map<string, string>;
  defaults: Partial<Record<Task, string>>;
}

export class ManifestError extends Error {
  override name = "ManifestError";
}

export { hubPath };

/** Resolves `p` inside `root`, refusing anything that would escape it. */
export function insideDir(root: string, p: string): string {
  const full = isAbsolute(p) ? resolve(p) : resolve(root, p);
  const rel = relative(resolve(root), full);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
    throw new ManifestError(`path "${p}" is outside the models folder ${root}`);
  }
  return full;
}

/**
 * The backend for a model whose manifest entry names none: the first whose descriptor claims the task and the
 * file (whisper.cpp the ggml files of speech models, llama.cpp GGUF files, a `path` or `options.file` ending
 * in .gguf, transformers.js the ONNX folders of chat and embedding models).
 */
export function defaultEngine(task: Task, file?: string): EngineKind {
  const d = BACKENDS.find((b) => b.claims(task, file));
  if (!d) throw new ManifestError(`no backend built into this server serves ${task} models`);
  return d.kind;
}

/** Refuses options another backend acts on but this one would ignore (`gpu_layers` on an ONNX model). */
function checkOwnOptions(id: string, engine: EngineKind, options: Record<string, unknown>): void {
  const own = backendOf(engine).ownOptions;
  for (const key of Object.keys(options)) {
    if (own.includes(key)) continue;
    const owners = BACKENDS.filter((b) => b.ownOptions.includes(key)).map((b) => b.kind);
    if (owners.length === 0) continue;
    const hint = key === "gpu_layers"
      ? `only llama.cpp (GGUF) models have layers to place; ${engine} runs a model whole on its device ` +
        "(device: cpu keeps it off the GPU)"
      : `only ${owners.join(" and ")} models read it; ${engine} would ignore it`;
    throw new ManifestError(`manifest: models.${id}.options.${key}: ${hint}`);
  }
}

export function parseManifest(json: unknown, modelsDir: string, device: DevicePref): Manifest {
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ManifestError(`manifest: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  const m = parsed.data;
  const entries = new Map<string, ModelEntry>();
  for (const [id, spec] of Object.entries(m.models)) {
    const path = spec.path ? insideDir(modelsDir, spec.path) : hubPath(modelsDir, spec.repo!);
    const file = typeof spec.options?.file === "string" ? spec.options.file : spec.path;
    const engine = spec.engine ?? defaultEngine(spec.task, file);
    if (!backendOf(engine).tasks.includes(spec.task)) {
      throw new ManifestError(`manifest: models.${id}.engine: ${engine} does not serve ${spec.task} models`);
    }
    // An option of another backend would be accepted and do nothing.
    checkOwnOptions(id, engine, spec.options ?? {});
    entries.set(id, {
      id,
      task: spec.task,
      engine,
      repo: spec.repo,
      path,
      dtype: spec.dtype,
      // The manifest's per-model device wins over the server-wide flag only when the flag is "auto".
      device: device === "auto" ? spec.device ?? "auto" : device,
      options: spec.options ?? {},
      created: spec.created ?? 1735689600,
      ownedBy: spec.owned_by ?? (spec.repo ? spec.repo.split("/")[0] : "local"),
    });
  }
  const defaults: Partial<Record<Task, string>> = {};
  for (const [task, id] of Object.entries(m.defaults) as [Task, string | undefined][]) {
    if (!id) continue;
    const e = entries.get(id);
    if (!e) throw new ManifestError(`manifest: defaults.${task}: unknown model "${id}"`);
    if (e.task !== task) throw new ManifestError(`manifest: defaults.${task}: "${id}" is a ${e.task} model`);
    defaults[task] = id;
  }
  const aliases = new Map<string, string>();
  for (const [alias, target] of Object.entries(m.aliases)) {
    const id = target.startsWith("@") ? defaults[target.slice(1) as Task] : target;
    if (!id) continue; // an alias to a task without a default is simply absent
    if (!entries.has(id)) throw new ManifestError(`manifest: aliases.${alias}: unknown model "${target}"`);
    if (entries.has(alias)) throw new ManifestError(`manifest: aliases.${alias}: shadows a model id`);
    aliases.set(alias, id);
  }
  return { entries, aliases, defaults };
}

export async function loadManifest(file: string, modelsDir: string, device: DevicePref): Promise<Manifest> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new ManifestError(`cannot read manifest ${file}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ManifestError(`manifest ${file} is not JSON: ${(e as Error).message}`);
  }
  return parseManifest(json, modelsDir, device);
}
