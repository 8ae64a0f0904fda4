// Owns one pull: list the repo at a revision, decide the files, download each into
// `<models-dir>/hub/<owner>/<name>/` (where the manifest's `hubPath` points the server), verified, in order.
// Knows nothing of the manifest file or the command line.
import { dirname } from "node:path";
import type { Task } from "../model_kinds.ts";
import type { HubClient } from "./client.ts";
import { downloadFile } from "./download.ts";
import { assertRealInside, checkRepoId, destinationOf, hubPath } from "./paths.ts";
import { planPull, type PullFormat, type PullPlan } from "./select.ts";
import type { ProgressSink } from "./progress.ts";

export interface PullRequest {
  repo: string;
  revision?: string;
  task?: Task;
  dtype?: string;
  file?: string;
  modelsDir: string;
  /** The layouts the backends read, in their order (the descriptors' pull formats). */
  formats: readonly PullFormat[];
}

export interface PulledFile {
  path: string;
  size: number;
  status: "present" | "downloaded" | "resumed";
}

export interface PullResult extends PullPlan {
  repo: string;
  /** Commit the files come from (the revision asked for when the hub does not say). */
  commit: string;
  dir: string;
  pulled: PulledFile[];
  /** Bytes received over the network. */
  fetched: number;
}

export interface PullOptions {
  progress?: ProgressSink;
  signal?: AbortSignal;
  retries?: number;
  retryDelayMs?: number;
  /** Called with the plan before anything is written; throwing stops the pull there. */
  onPlan?(plan: PullPlan, repo: string): void | Promise<void>;
}

export async function pullModel(
  client: HubClient,
  req: PullRequest,
  opts: PullOptions = {},
): Promise<PullResult> {
  const repo = checkRepoId(req.repo);
  const revision = req.revision ?? "main";
  const info = await client.repoInfo(repo, revision, opts.signal);
  const plan = planPull(info, { task: req.task, dtype: req.dtype, file: req.file }, req.formats);
  // Every file of one pull comes from the same commit, even if the branch moves meanwhile.
  const commit = info.sha ?? revision;
  const dir = hubPath(req.modelsDir, repo);
  const targets = plan.files.map((f) => ({ file: f, dest: destinationOf(dir, f.path) }));
  await opts.onPlan?.(plan, repo);
  // Folders first, then a check that none of them leads elsewhere through a symlink. The repo folder itself
  // may be a link (a cache on another disk); what is inside it must stay inside it.
  for (const { dest } of targets) {
    await Deno.mkdir(dirname(dest), { recursive: true });
    await assertRealInside(dir, dirname(dest));
  }
  const pulled: PulledFile[] = [];
  let fetched = 0;
  const width = Math.max(...plan.files.map((f) => f.path.length));
  for (const { file, dest } of targets) {
    const bar = opts.progress?.begin(file.path.padEnd(width), file.size);
    try {
      const out = await downloadFile(
        client,
        client.fileUrl(repo, commit, file.path),
        dest,
        { size: file.size, sha256: file.sha256, gitSha1: file.sha256 ? undefined : file.blobId },
        {
          label: file.path,
          signal: opts.signal,
          retries: opts.retries,
          retryDelayMs: opts.retryDelayMs,
          onProgress: (done) => bar?.update(done),
          onRetry: (e, n) => opts.progress?.note(`retry ${n}: ${e.message}`),
        },
      );
      bar?.finish(out.status === "present" ? "already there" : out.status);
      pulled.push({ path: file.path, size: file.size, status: out.status });
      fetched += out.fetched;
    } catch (e) {
      bar?.fail();
      throw e;
    }
  }
  return { ...plan, repo, commit, dir, pulled, fetched };
}
