// Owns on-demand downloads when a model loads with files missing: one repo listing, then each missing file
// through the same downloadFile as `deno task pull` (resume, retries, size and hash checks, atomic rename) into
// the model's folder, shown with the same progress display. Every backend (ONNX chat and embeddings, GGUF)
// loads only from local files afterwards, so there is one download path.
import { dirname } from "node:path";
import { HubClient, type HubFile, type HubOptions, hubOptionsFromEnv } from "./client.ts";
import { downloadFile } from "./download.ts";
import { assertRealInside, destinationOf } from "./paths.ts";
import { terminalProgress } from "./progress.ts";

export interface FetchFilesRequest {
  repo: string;
  revision?: string;
  /** The model's folder: `<models>/hub/<owner>/<name>` or a manifest `path`. */
  dir: string;
  /** Files that must exist after the call (relative to the repo root). */
  required: string[];
  /** Extra files fetched when the repo has them (pooling configs, external data, generation defaults). */
  optional?: (file: HubFile) => boolean;
  /** Plain progress lines go here when stderr is not a terminal. */
  log?: (line: string) => void;
  signal?: AbortSignal;
  hub?: HubOptions;
}

/** A required file the repo does not have. */
export class RepoFileMissing extends Error {
  override name = "RepoFileMissing";
}

/** Downloads what is missing (or only partly there) and returns the paths that were fetched. */
export async function fetchRepoFiles(req: FetchFilesRequest): Promise<string[]> {
  const client = new HubClient(req.hub ?? hubOptionsFromEnv());
  const info = await client.repoInfo(req.repo, req.revision ?? "main", req.signal);
  const byPath = new Map(info.files.map((f) => [f.path, f]));
  const absent = req.required.filter((p) => !byPath.has(p));
  if (absent.length) {
    throw new RepoFileMissing(`${req.repo} has no ${absent.map((p) => `'${p}'`).join(", ")}`);
  }
  const wanted = new Map<string, HubFile>();
  for (const p of req.required) wanted.set(p, byPath.get(p)!);
  for (const f of info.files) if (req.optional?.(f)) wanted.set(f.path, f);
  const commit = info.sha ?? req.revision ?? "main";
  const sink = terminalProgress(undefined, req.log);
  const fetched: string[] = [];
  for (const file of wanted.values()) {
    const dest = destinationOf(req.dir, file.path);
    // A complete file is left alone (hashing gigabytes at every load would be slow); `pull` re-verifies.
    if ((await Deno.stat(dest).catch(() => undefined))?.size === file.size) continue;
    await Deno.mkdir(dirname(dest), { recursive: true });
    await assertRealInside(req.dir, dirname(dest));
    const bar = sink.begin(`${req.repo} ${file.path}`, file.size);
    try {
      const out = await downloadFile(
        client,
        client.fileUrl(req.repo, commit, file.path),
        dest,
        { size: file.size, sha256: file.sha256, gitSha1: file.sha256 ? undefined : file.blobId },
        { label: file.path, signal: req.signal, onProgress: (done) => bar.update(done) },
      );
      bar.finish(out.status === "present" ? "already there" : out.status);
      if (out.status !== "present") fetched.push(file.path);
    } catch (e) {
      bar.fail();
      throw e;
    }
  }
  return fetched;
}
