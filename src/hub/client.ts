// Owns the Hugging Face hub HTTP API as this server uses it: the endpoint and token (HF_ENDPOINT, HF_TOKEN),
// the repo listing with file sizes and hashes (`GET /api/models/{repo}/revision/{rev}?blobs=true`), file URLs
// (`/{repo}/resolve/{rev}/{path}`), and redirect handling that never sends the token to another origin.
import { z } from "zod";
import { HubError } from "./errors.ts";
import { checkRepoFile, checkRepoId } from "./paths.ts";

export const DEFAULT_ENDPOINT = "https://huggingface.co";

export interface HubOptions {
  endpoint?: string;
  token?: string;
  fetch?: typeof fetch;
}

/** Reads the hub settings huggingface_hub users already have in their environment. */
export function hubOptionsFromEnv(env: Record<string, string | undefined> = Deno.env.toObject()): HubOptions {
  return {
    endpoint: env.HF_ENDPOINT || DEFAULT_ENDPOINT,
    token: env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN || undefined,
  };
}

export interface HubFile {
  /** Path inside the repo (already checked by checkRepoFile). */
  path: string;
  size: number;
  /** Git blob id: the sha1 of the content for regular files, of the pointer file for LFS files. */
  blobId?: string;
  /** Set for files stored with Git LFS: the content's sha256. */
  sha256?: string;
}

export interface RepoInfo {
  repo: string;
  /** The commit the listing describes; downloads are pinned to it so all files come from one commit. */
  sha?: string;
  pipelineTag?: string;
  libraryName?: string;
  files: HubFile[];
}

const HEX40 = /^[0-9a-f]{40}$/;
const HEX64 = /^[0-9a-f]{64}$/;

// Only what a download needs; the hub sends much more and may add fields at any time.
const Sibling = z.object({
  rfilename: z.string(),
  size: z.number().int().nonnegative().optional(),
  blobId: z.string().regex(HEX40).optional(),
  lfs: z.object({
    sha256: z.string().regex(HEX64),
    size: z.number().int().nonnegative(),
  }).passthrough().optional(),
}).passthrough();

const ModelInfo = z.object({
  id: z.string().optional(),
  sha: z.string().optional(),
  pipeline_tag: z.string().optional(),
  library_name: z.string().optional(),
  siblings: z.array(Sibling),
}).passthrough();

const MAX_REDIRECTS = 10;

export class HubClient {
  readonly endpoint: string;
  readonly #origin: string;
  readonly #token?: string;
  readonly #fetch: typeof fetch;

  constructor(opts: HubOptions = {}) {
    const endpoint = (opts.endpoint || DEFAULT_ENDPOINT).replace(/\/+$/, "");
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw new HubError(`HF_ENDPOINT "${endpoint}" is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new HubError(`HF_ENDPOINT "${endpoint}" must be http(s)`);
    }
    this.endpoint = endpoint;
    this.#origin = url.origin;
    this.#token = opts.token;
    this.#fetch = opts.fetch ?? fetch;
  }

  /** URL of one file of a repo at a revision (branch, tag or commit). */
  fileUrl(repo: string, revision: string, path: string): string {
    checkRepoId(repo);
    checkRepoFile(path);
    const file = path.split("/").map(encodeURIComponent).join("/");
    return `${this.endpoint}/${repo}/resolve/${encodeURIComponent(revision)}/${file}`;
  }

  /** Lists a repo's files with sizes and hashes. */
  async repoInfo(repo: string, revision = "main", signal?: AbortSignal): Promise<RepoInfo> {
    checkRepoId(repo);
    const url = `${this.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?blobs=true`;
    const res = await this.get(url, { signal });
    if (!res.ok) throw await statusError(res, repo, revision);
    let json: unknown;
    try {
      json = await res.json();
    } catch (e) {
      throw new HubError(`hub answered ${url} with malformed JSON: ${(e as Error).message}`, true);
    }
    const parsed = ModelInfo.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new HubError(
        `hub listing of ${repo} is not understood: ${issue.path.join(".")}: ${issue.message}`,
      );
    }
    const info = parsed.data;
    const files = info.siblings.map((s): HubFile => {
      const path = checkRepoFile(s.rfilename);
      const size = s.lfs?.size ?? s.size;
      if (size === undefined) throw new HubError(`hub listing of ${repo} has no size for ${path}`);
      if (s.lfs && s.size !== undefined && s.size !== s.lfs.size) {
        throw new HubError(`hub listing of ${repo} gives two sizes for ${path}`);
      }
      return { path, size, blobId: s.blobId, sha256: s.lfs?.sha256 };
    });
    return {
      repo,
      sha: info.sha && HEX40.test(info.sha) ? info.sha : undefined,
      pipelineTag: info.pipeline_tag,
      libraryName: info.library_name,
      files,
    };
  }

  /**
   * GET with redirects followed by hand: the token goes only to the hub's own origin (large files are
   * redirected to a CDN, which must not see it), and relative Locations resolve against the current URL.
   */
  async get(
    url: string,
    init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    let current = url;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const headers = new Headers(init.headers);
      if (this.#token && new URL(current).origin === this.#origin) {
        headers.set("authorization", `Bearer ${this.#token}`);
      }
      let res: Response;
      try {
        res = await this.#fetch(current, { headers, redirect: "manual", signal: init.signal });
      } catch (e) {
        if (init.signal?.aborted) throw e;
        throw new HubError(`cannot reach ${new URL(current).origin}: ${(e as Error).message}`, true);
      }
      if (res.status < 300 || res.status >= 400) return res;
      const location = res.headers.get("location");
      await res.body?.cancel();
      if (!location) throw new HubError(`hub answered ${res.status} without a Location for ${current}`);
      const next = new URL(location, current);
      if (next.protocol !== "http:" && next.protocol !== "https:") {
        throw new HubError(`hub redirected to a non-http URL: ${next.protocol}`);
      }
      current = next.href;
    }
    throw new HubError(`too many redirects for ${url}`);
  }
}

/** One line for a failed hub answer, naming the likely cause. */
export async function statusError(res: Response, repo: string, revision?: string): Promise<HubError> {
  const code = res.headers.get("x-error-code") ?? "";
  let detail = res.headers.get("x-error-message") ?? "";
  if (!detail) {
    const text = await res.text().catch(() => "");
    try {
      detail = String(JSON.parse(text).error ?? "");
    } catch {
      detail = text.slice(0, 200);
    }
  }
  const suffix = detail ? ` (${detail.replace(/\s+/g, " ").trim()})` : "";
  if (code === "RevisionNotFound") {
    return new HubError(`revision "${revision}" of ${repo} not found${suffix}`);
  }
  if (code === "EntryNotFound") return new HubError(`file not found in ${repo}${suffix}`);
  if (code === "GatedRepo") {
    return new HubError(`${repo} is gated: accept its terms on the hub and set HF_TOKEN`);
  }
  if (res.status === 401 || res.status === 403 || code === "RepoNotFound" || res.status === 404) {
    // The hub answers 401 for repos that do not exist as well as for private ones.
    return new HubError(`${repo} not found on the hub, or private (set HF_TOKEN)${suffix}`);
  }
  return new HubError(
    `hub answered ${res.status} for ${repo}${suffix}`,
    res.status >= 500 || res.status === 429,
  );
}
