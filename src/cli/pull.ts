// Owns `pull <repo-or-model-id>`: works out what to pull (a manifest id reuses its entry's repo, dtype and
// file), downloads through src/hub/, and only then adds or updates the manifest entry (and the task's
// default when there is none), so a failed pull never leaves the manifest pointing at missing files.
import type { Config } from "../config.ts";
import type { Task } from "../engines/types.ts";
import { HubClient, hubOptionsFromEnv } from "../hub/client.ts";
import { formatBytes, type ProgressSink, terminalProgress } from "../hub/progress.ts";
import { isRepoId } from "../hub/paths.ts";
import { pullModel, type PullResult } from "../hub/pull.ts";
import type { PullPlan } from "../hub/select.ts";
import { BACKENDS } from "../engines/backends.ts";
import { UsageError } from "./args.ts";
import {
  aliasTarget,
  type ManifestDoc,
  readManifestDoc,
  validateDoc,
  writeManifestDoc,
} from "./manifest_file.ts";

export const PULL_FLAGS = {
  dtype: "string",
  task: "string",
  file: "string",
  as: "string",
  revision: "string",
  retries: "string",
} as const;

export const PULL_USAGE = `Usage: deno task pull <owner/name | model-id> [flags]

Downloads a model from the Hugging Face hub into <models-dir>/hub/<owner>/<name>/ (resuming an interrupted
download, checking the sizes and hashes the hub publishes) and adds or updates its manifest entry.
A model id already in the manifest pulls that entry's repo, dtype and file.

  --dtype=fp32|fp16|q8|q4|q4f16|...  ONNX weights to fetch (default: q4 for chat, fp32 for embeddings)
  --task=chat|embedding|transcription  what the model serves (default: the hub's pipeline tag)
  --file=ggml-base.en.bin            the ggml file of a whisper.cpp repo
  --as=<id>                          public model id (default: derived from the repo or file name)
  --revision=<branch|tag|commit>     default: main
  --retries=<n>                      resume attempts after a network failure (default: 3)
  --models-dir, --manifest           as for the server (see --help)

Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN for gated or private repos.`;

const TASKS: Task[] = ["chat", "embedding", "transcription"];
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:\/-]{0,127}$/;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: Record<string, string | undefined>;
  progress?: ProgressSink;
  signal?: AbortSignal;
}

interface Target {
  repo: string;
  /** Set when the argument named a manifest entry (or an alias of one). */
  id?: string;
  existing?: Record<string, unknown>;
}

function resolveTarget(doc: ManifestDoc, arg: string, manifestPath: string): Target {
  const id = doc.models[arg] ? arg : aliasTarget(doc, arg);
  if (id && doc.models[id]) {
    const existing = doc.models[id];
    if (typeof existing.repo !== "string") {
      throw new UsageError(
        `model "${id}" is a local model (path ${existing.path}): there is nothing to pull`,
      );
    }
    return { repo: existing.repo, id, existing };
  }
  if (isRepoId(arg)) return { repo: arg };
  throw new UsageError(`"${arg}" is neither a model id in ${manifestPath} nor a hub repo (owner/name)`);
}

/** The id a new entry gets when none is given: the repo's name, or whisper-<size> for a ggml file. */
export function derivedId(plan: PullPlan, repo: string): string {
  if (plan.kind === "whisper") return `whisper-${plan.file!.replace(/^ggml-/, "").replace(/\.bin$/, "")}`;
  if (plan.kind === "gguf") return plan.file!.split("/").pop()!.replace(/\.gguf$/i, "").toLowerCase();
  return repo.split("/")[1].toLowerCase();
}

function sameSource(spec: Record<string, unknown>, repo: string, plan: PullPlan): boolean {
  if (typeof spec.repo !== "string" || spec.repo.toLowerCase() !== repo.toLowerCase()) return false;
  if (plan.kind === "transformers") return true;
  return (spec.options as Record<string, unknown> | undefined)?.file === plan.file;
}

/** The document after the pull: the entry added or updated in place, other entries untouched. */
export function applyPull(
  doc: ManifestDoc,
  id: string,
  repo: string,
  plan: PullPlan,
  now = Math.floor(Date.now() / 1000),
): { doc: ManifestDoc; added: boolean; madeDefault: boolean } {
  const next: ManifestDoc = structuredClone(doc);
  const existing = next.models[id];
  // Existing keys keep their place (assignment does not reorder); new ones are appended.
  const spec: Record<string, unknown> = existing ? { ...existing } : {};
  spec.task = plan.task;
  spec.repo = repo;
  delete spec.path;
  if (plan.kind === "transformers") spec.dtype = plan.dtype;
  else delete spec.dtype;
  if (plan.kind !== "transformers") {
    spec.options = { ...(spec.options as Record<string, unknown> | undefined), file: plan.file };
  }
  if (!existing) spec.created = now;
  next.models[id] = spec;
  const madeDefault = !next.defaults[plan.task];
  if (madeDefault) next.defaults[plan.task] = id;
  return { doc: next, added: !existing, madeDefault };
}

function parseRetries(v: string | boolean | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !/^\d+$/.test(v)) {
    throw new UsageError(`--retries: expected a whole number (got "${v}")`);
  }
  return Number(v);
}

export async function runPull(
  config: Config,
  arg: string,
  flags: Record<string, string | boolean>,
  io: CliIo,
): Promise<number> {
  const task = flags.task as string | undefined;
  if (task !== undefined && !TASKS.includes(task as Task)) {
    throw new UsageError(`--task: expected one of ${TASKS.join(", ")} (got "${task}")`);
  }
  const as = flags.as as string | undefined;
  if (as !== undefined && !MODEL_ID.test(as)) {
    throw new UsageError(`--as: "${as}" is not a usable model id (letters, digits and . _ : / -)`);
  }
  const retries = parseRetries(flags.retries);
  const { doc } = await readManifestDoc(config.manifest);
  const target = resolveTarget(doc, arg, config.manifest);
  const existingOptions = target.existing?.options as Record<string, unknown> | undefined;
  const wish = {
    task: (task ?? target.existing?.task) as Task | undefined,
    dtype: (flags.dtype as string | undefined) ?? (target.existing?.dtype as string | undefined),
    file: (flags.file as string | undefined) ?? (existingOptions?.file as string | undefined),
  };

  let planned: { id: string; doc: ManifestDoc; added: boolean; madeDefault: boolean } | undefined;
  const onPlan = (plan: PullPlan, repo: string) => {
    if (as !== undefined && doc.models[as] && !sameSource(doc.models[as], repo, plan)) {
      const other = doc.models[as];
      throw new UsageError(
        `model id "${as}" already names ${
          other.repo ?? other.path
        } in the manifest; choose another --as or ` +
          `remove that entry first`,
      );
    }
    let id = as ?? target.id;
    if (!id) {
      // The same repo (and ggml file) already in the manifest is updated rather than added twice.
      id = Object.entries(doc.models).find(([, spec]) => sameSource(spec, repo, plan))?.[0];
    }
    if (!id) {
      id = derivedId(plan, repo);
      const taken = doc.models[id];
      if (taken || doc.aliases[id] !== undefined) {
        const what = taken ? `the model of ${taken.repo ?? taken.path}` : "an alias";
        throw new UsageError(`model id "${id}" is already ${what}; choose another with --as`);
      }
    }
    const applied = applyPull(doc, id, repo, plan);
    // Refuse before downloading anything if the server would not accept the result.
    validateDoc(applied.doc, config.modelsDir);
    planned = { id, ...applied };
  };

  const client = new HubClient(hubOptionsFromEnv(io.env));
  const res: PullResult = await pullModel(
    client,
    {
      repo: target.repo,
      revision: flags.revision as string | undefined,
      ...wish,
      modelsDir: config.modelsDir,
      // The layouts of the backends built in, in their order.
      formats: BACKENDS.map((b) => b.pullFormat),
    },
    { progress: io.progress ?? terminalProgress(), signal: io.signal, retries, onPlan },
  );
  const p = planned!;
  await writeManifestDoc(config.manifest, p.doc, config.modelsDir);

  const counts = new Map<string, number>();
  for (const f of res.pulled) counts.set(f.status, (counts.get(f.status) ?? 0) + 1);
  const how = [...counts].map(([s, n]) => `${n} ${s === "present" ? "already there" : s}`).join(", ");
  const total = res.pulled.reduce((n, f) => n + f.size, 0);
  const what = res.kind !== "transformers" ? res.file : `dtype ${res.dtype}`;
  io.out(
    `pulled ${res.repo}@${
      res.commit.slice(0, 12)
    } as "${p.id}" (${res.task}, ${what}): ${res.pulled.length} files, ` +
      `${formatBytes(total)} (${how})`,
  );
  io.out(
    `manifest ${config.manifest}: ${p.added ? "added" : "updated"} "${p.id}"` +
      (p.madeDefault ? `, now the default ${res.task} model` : ""),
  );
  return 0;
}
