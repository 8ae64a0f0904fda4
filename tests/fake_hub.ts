// Owns a local stand-in for the Hugging Face hub, for tests of `pull`: it serves folders in the hub's URL
// layout (`/api/models/{repo}/revision/{rev}?blobs=true` with sizes, git blob ids and LFS sha256, and
// `/{repo}/resolve/{rev}/{path}`), redirects LFS files to a second "CDN" origin as the real hub does, honours
// Range requests, and can be told to misbehave: cut a response short, serve corrupted bytes, ignore Range.
import { createHash } from "node:crypto";
import { join, relative, sep } from "node:path";

export interface FakeRepoSpec {
  /** Folder whose files are the repo's files (dot-files such as `.generated` are left out). */
  dir: string;
  /** Commit id the listing reports (default: derived from the repo id). */
  sha?: string;
  pipelineTag?: string;
  /** Which files are stored with LFS (default: weights by extension, or anything over 10 MB). */
  isLfs?: (path: string, size: number) => boolean;
  /** Raw entries appended to the listing's siblings, e.g. hostile file names. */
  extraSiblings?: Record<string, unknown>[];
}

export interface HubRequest {
  server: "hub" | "cdn";
  method: string;
  path: string;
  range: string | null;
  authorization: string | null;
  status: number;
}

export interface FakeHub {
  url: string;
  cdnUrl: string;
  requests: HubRequest[];
  /** The next `times` responses for repo file `path` stop after `afterBytes` bytes of body. */
  cut(path: string, afterBytes: number, times?: number): void;
  /** Serve `path` with one byte changed in the middle (same size, so only a hash check can tell). */
  corrupt(path: string, on?: boolean): void;
  /** Answer every request with the whole file and 200, as servers without Range support do. */
  ignoreRange(on?: boolean): void;
  /** Pace the body of `path` at about `bytesPerSecond` (0 = full speed again). */
  slow(path: string, bytesPerSecond: number): void;
  /** The bytes and hashes the hub publishes for a repo file. */
  file(repo: string, path: string): RepoFile;
  close(): Promise<void>;
}

export interface RepoFile {
  path: string;
  data: Uint8Array<ArrayBuffer>;
  sha256: string;
  gitSha1: string;
  lfs: boolean;
}

const LFS_EXT = /\.(onnx|onnx_data(_\d+)?|bin|safetensors|gguf)$/;

function defaultIsLfs(path: string, size: number): boolean {
  return LFS_EXT.test(path) || size > 10_000_000;
}

function hex(algo: string, ...parts: (string | Uint8Array)[]): string {
  const h = createHash(algo);
  for (const p of parts) h.update(p);
  return h.digest("hex");
}

async function readRepo(spec: FakeRepoSpec): Promise<Map<string, RepoFile>> {
  const files = new Map<string, RepoFile>();
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.name.startsWith(".") || e.name.endsWith(".part")) continue;
      const full = join(dir, e.name);
      if (e.isDirectory) await walk(full);
      else if (e.isFile) {
        const path = relative(spec.dir, full).split(sep).join("/");
        const data = await Deno.readFile(full);
        files.set(path, {
          path,
          data,
          sha256: hex("sha256", data),
          gitSha1: hex("sha1", `blob ${data.length}\0`, data),
          lfs: (spec.isLfs ?? defaultIsLfs)(path, data.length),
        });
      }
    }
  };
  await walk(spec.dir);
  return files;
}

/** The text git-lfs stores in git for an LFS file; its blob id is what the hub reports as `blobId`. */
function pointerOf(f: RepoFile): string {
  return `version https://git-lfs.github.com/spec/v1\noid sha256:${f.sha256}\nsize ${f.data.length}\n`;
}

export async function startFakeHub(
  specs: Record<string, FakeRepoSpec>,
  opts: { token?: string } = {},
): Promise<FakeHub> {
  const repos = new Map<string, { spec: FakeRepoSpec; sha: string; files: Map<string, RepoFile> }>();
  for (const [id, spec] of Object.entries(specs)) {
    repos.set(id, { spec, sha: spec.sha ?? hex("sha1", `commit ${id}`), files: await readRepo(spec) });
  }
  const bySha256 = new Map<string, RepoFile>();
  for (const r of repos.values()) for (const f of r.files.values()) if (f.lfs) bySha256.set(f.sha256, f);
  const requests: HubRequest[] = [];
  const cuts = new Map<string, { afterBytes: number; times: number }>();
  const corrupted = new Set<string>();
  const paced = new Map<string, number>();
  let noRange = false;

  const error = (status: number, code: string, message: string) =>
    Response.json({ error: message }, {
      status,
      headers: { "x-error-code": code, "x-error-message": message },
    });

  function serveContent(req: Request, f: RepoFile, extra: Record<string, string>): Response {
    let data = f.data;
    if (corrupted.has(f.path)) {
      data = data.slice();
      data[data.length >> 1] ^= 0xff;
    }
    const headers: Record<string, string> = {
      "content-type": "application/octet-stream",
      "accept-ranges": "bytes",
      ...extra,
    };
    let status = 200;
    let body = data;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.get("range") ?? "");
    if (m && !noRange) {
      const start = Number(m[1]);
      const end = m[2] ? Math.min(Number(m[2]), data.length - 1) : data.length - 1;
      if (start >= data.length || end < start) {
        return new Response(null, { status: 416, headers: { "content-range": `bytes */${data.length}` } });
      }
      status = 206;
      headers["content-range"] = `bytes ${start}-${end}/${data.length}`;
      body = data.subarray(start, end + 1);
    }
    headers["content-length"] = String(body.length);
    if (req.method === "HEAD") return new Response(null, { status, headers });
    const cut = cuts.get(f.path);
    if (cut && cut.times > 0) {
      cut.times--;
      const partial = body.slice(0, cut.afterBytes);
      // The declared length stays whole: the client sees the connection end early, as on a network cut.
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(partial);
          c.close();
        },
      });
      return new Response(stream, { status, headers });
    }
    const rate = paced.get(f.path);
    if (rate) {
      const chunk = 16384;
      let off = 0;
      const stream = new ReadableStream<Uint8Array>({
        async pull(c) {
          if (off >= body.length) return c.close();
          await new Promise((r) => setTimeout(r, (chunk / rate) * 1000));
          c.enqueue(body.slice(off, off + chunk));
          off += chunk;
        },
      });
      return new Response(stream, { status, headers });
    }
    return new Response(body, { status, headers });
  }

  function authorized(req: Request): boolean {
    return !opts.token || req.headers.get("authorization") === `Bearer ${opts.token}`;
  }

  function hubHandler(req: Request, url: URL): Response {
    const api = /^\/api\/models\/([^/]+\/[^/]+?)(?:\/revision\/([^/]+))?$/.exec(url.pathname);
    if (api) {
      const repoId = decodeURIComponent(api[1]);
      const repo = repos.get(repoId);
      if (!authorized(req) || !repo) return error(401, "RepoNotFound", "Repository not found");
      const rev = api[2] ? decodeURIComponent(api[2]) : "main";
      if (rev !== "main" && rev !== repo.sha) return error(404, "RevisionNotFound", `Invalid rev id: ${rev}`);
      const blobs = url.searchParams.get("blobs") === "true";
      const siblings: Record<string, unknown>[] = [...repo.files.values()].map((f) =>
        blobs
          ? {
            rfilename: f.path,
            size: f.data.length,
            blobId: f.lfs ? hex("sha1", `blob ${pointerOf(f).length}\0`, pointerOf(f)) : f.gitSha1,
            ...(f.lfs
              ? { lfs: { sha256: f.sha256, size: f.data.length, pointerSize: pointerOf(f).length } }
              : {}),
          }
          : { rfilename: f.path }
      );
      siblings.push(...(repo.spec.extraSiblings ?? []));
      return Response.json({
        _id: repo.sha.slice(0, 24),
        id: repoId,
        modelId: repoId,
        sha: repo.sha,
        private: false,
        pipeline_tag: repo.spec.pipelineTag,
        library_name: "transformers.js",
        siblings,
      });
    }
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (resolve && (req.method === "GET" || req.method === "HEAD")) {
      const repo = repos.get(resolve[1]);
      if (!authorized(req) || !repo) return error(401, "RepoNotFound", "Repository not found");
      const rev = decodeURIComponent(resolve[2]);
      if (rev !== "main" && rev !== repo.sha) return error(404, "RevisionNotFound", `Invalid rev id: ${rev}`);
      const path = resolve[3].split("/").map(decodeURIComponent).join("/");
      const f = repo.files.get(path);
      if (!f) return error(404, "EntryNotFound", `${path} does not exist on "${rev}"`);
      const common = { "x-repo-commit": repo.sha };
      if (f.lfs) {
        return new Response(null, {
          status: 302,
          headers: {
            ...common,
            location: `${cdnUrl}/lfs/${f.sha256}?name=${encodeURIComponent(path)}`,
            "x-linked-size": String(f.data.length),
            "x-linked-etag": `"${f.sha256}"`,
          },
        });
      }
      return serveContent(req, f, { ...common, etag: `"${f.gitSha1}"` });
    }
    return error(404, "NotFound", "not found");
  }

  function cdnHandler(req: Request, url: URL): Response {
    const m = /^\/lfs\/([0-9a-f]{64})$/.exec(url.pathname);
    const f = m && bySha256.get(m[1]);
    if (!f) return new Response("not found", { status: 404 });
    return serveContent(req, f, { etag: `"${f.sha256}"` });
  }

  const serve = (server: "hub" | "cdn", handler: (req: Request, url: URL) => Response) =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
      const url = new URL(req.url);
      const res = handler(req, url);
      requests.push({
        server,
        method: req.method,
        path: url.pathname,
        range: req.headers.get("range"),
        authorization: req.headers.get("authorization"),
        status: res.status,
      });
      return res;
    });
  const hub = serve("hub", hubHandler);
  const cdn = serve("cdn", cdnHandler);
  const cdnUrl = `http://127.0.0.1:${cdn.addr.port}`;

  return {
    url: `http://127.0.0.1:${hub.addr.port}`,
    cdnUrl,
    requests,
    cut: (path, afterBytes, times = 1) => void cuts.set(path, { afterBytes, times }),
    corrupt: (path, on = true) => void (on ? corrupted.add(path) : corrupted.delete(path)),
    ignoreRange: (on = true) => void (noRange = on),
    slow: (path, bytesPerSecond) =>
      void (bytesPerSecond > 0 ? paced.set(path, bytesPerSecond) : paced.delete(path)),
    file(repo, path) {
      const f = repos.get(repo)?.files.get(path);
      if (!f) throw new Error(`fake hub: no ${repo}/${path}`);
      return f;
    },
    close: async () => {
      await Promise.all([hub.shutdown(), cdn.shutdown()]);
    },
  };
}
