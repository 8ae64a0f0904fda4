// Owns downloading one file: resume from `<dest>.part` with an HTTP Range request (206 appends; a server
// that ignores Range and answers 200 restarts the part), retries with backoff, size and hash checks, and the
// atomic rename into place. A file whose checks fail is deleted, never left where the server would load it.
import { dirname } from "node:path";
import { HubError } from "./errors.ts";
import type { HubClient } from "./client.ts";
import { ContentHasher, type Expected, hashFile } from "./hash.ts";

export type { Expected } from "./hash.ts";

export interface DownloadOptions {
  /** Name used in messages (the repo path). */
  label?: string;
  signal?: AbortSignal;
  /** Extra attempts after a retryable failure (network cut, 5xx), each resuming where the last stopped. */
  retries?: number;
  retryDelayMs?: number;
  /** Bytes of the file on disk so far (resumed bytes included) out of `total`. */
  onProgress?(done: number, total: number): void;
  onRetry?(error: HubError, attempt: number): void;
}

export interface DownloadOutcome {
  /** present: a verified copy was already there; resumed: an earlier part was continued. */
  status: "present" | "downloaded" | "resumed";
  /** Bytes received over the network by this call. */
  fetched: number;
}

const WRITE_BATCH = 4 << 20;

export function partPath(dest: string): string {
  return `${dest}.part`;
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    const st = await Deno.stat(path);
    return st.isFile ? st.size : undefined;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

async function removeIfThere(path: string): Promise<void> {
  await Deno.remove(path).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

async function writeAll(file: Deno.FsFile, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) off += await file.write(data.subarray(off));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Parses `bytes start-end/total` (total may be `*`). */
export function parseContentRange(
  v: string | null,
): { start: number; end: number; total?: number } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(v?.trim() ?? "");
  if (!m) return undefined;
  return { start: Number(m[1]), end: Number(m[2]), total: m[3] === "*" ? undefined : Number(m[3]) };
}

/** Verifies an existing file against the expectation (size, then hashes). */
export async function verifyFile(path: string, expected: Expected): Promise<string | undefined> {
  const size = await sizeOf(path);
  if (size === undefined) return "missing";
  if (size !== expected.size) return `size ${size}, expected ${expected.size}`;
  const hasher = new ContentHasher(expected);
  await hashFile(path, hasher);
  return hasher.mismatch();
}

/** Downloads `url` into `dest`, resuming from `dest.part`; returns once the file is verified and in place. */
export async function downloadFile(
  client: HubClient,
  url: string,
  dest: string,
  expected: Expected,
  opts: DownloadOptions = {},
): Promise<DownloadOutcome> {
  const label = opts.label ?? dest;
  const retries = opts.retries ?? 3;
  const total = expected.size;
  // A verified copy is kept; a damaged one is downloaded again (the rename below replaces it).
  if ((await sizeOf(dest)) === total && (await verifyFile(dest, expected)) === undefined) {
    opts.onProgress?.(total, total);
    return { status: "present", fetched: 0 };
  }
  await Deno.mkdir(dirname(dest), { recursive: true });
  const part = partPath(dest);
  let fetched = 0;
  let resumed = false;

  const attempt = async (): Promise<void> => {
    // Only a regular file is resumed; anything else at that name (a link, a folder) is not ours to append to.
    const st = await Deno.lstat(part).catch(() => undefined);
    if (st && !st.isFile) await Deno.remove(part, { recursive: true });
    let offset = (await sizeOf(part)) ?? 0;
    if (offset > total) {
      await removeIfThere(part);
      offset = 0;
    }
    const hasher = new ContentHasher(expected);
    if (offset < total) {
      // Ask for the bytes as stored: a transparently decompressed body would not match sizes and hashes.
      const headers: Record<string, string> = { "accept-encoding": "identity" };
      if (offset > 0) headers.range = `bytes=${offset}-`;
      const res = await client.get(url, { headers, signal: opts.signal });
      let append = false;
      if (res.status === 206) {
        const cr = parseContentRange(res.headers.get("content-range"));
        if (!cr || cr.start !== offset || (cr.total !== undefined && cr.total !== total)) {
          await res.body?.cancel();
          await removeIfThere(part);
          throw new HubError(
            `${label}: unexpected Content-Range "${res.headers.get("content-range")}"`,
            true,
          );
        }
        append = offset > 0;
      } else if (res.status === 200) {
        offset = 0; // the server ignored Range: start over
        const len = res.headers.get("content-length");
        if (len !== null && Number(len) !== total) {
          await res.body?.cancel();
          throw new HubError(`${label}: the hub lists ${total} bytes but serves ${len}`);
        }
      } else if (res.status === 416) {
        await res.body?.cancel();
        await removeIfThere(part);
        throw new HubError(`${label}: the server refused to resume at byte ${offset}; starting over`, true);
      } else {
        await res.body?.cancel();
        const retryable = res.status >= 500 || res.status === 429;
        const why = res.status === 404
          ? "not found"
          : res.status === 401 || res.status === 403
          ? "access denied (set HF_TOKEN)"
          : `HTTP ${res.status}`;
        throw new HubError(`${label}: ${why} at ${url}`, retryable);
      }
      if (!res.body) throw new HubError(`${label}: empty response body`, true);
      if (append) {
        await hashFile(part, hasher, offset);
        resumed = true;
      }
      opts.onProgress?.(offset, total);
      const file = await Deno.open(part, { write: true, create: true, append, truncate: !append });
      // Network chunks are small (16-64 KiB); writing them in batches of up to 4 MiB makes downloads ~1.5x faster.
      const pending: Uint8Array[] = [];
      let pendingBytes = 0;
      let lastFlush = performance.now();
      const flush = async () => {
        if (pendingBytes === 0) return;
        const buf = pending.length === 1 ? pending[0] : new Uint8Array(pendingBytes);
        if (pending.length > 1) {
          let at = 0;
          for (const p of pending) {
            buf.set(p, at);
            at += p.length;
          }
        }
        pending.length = 0;
        pendingBytes = 0;
        lastFlush = performance.now();
        await writeAll(file, buf);
      };
      try {
        for await (const chunk of res.body) {
          if (offset + chunk.length > total) {
            throw new HubError(`${label}: the server sent more than the ${total} bytes the hub lists`);
          }
          pending.push(chunk);
          pendingBytes += chunk.length;
          hasher.update(chunk);
          offset += chunk.length;
          fetched += chunk.length;
          // On a slow link the part is also kept current every second, for resuming after a hard kill.
          if (pendingBytes >= WRITE_BATCH || performance.now() - lastFlush > 1000) await flush();
          opts.onProgress?.(offset, total);
        }
        await flush();
      } catch (e) {
        if (e instanceof HubError) {
          await removeIfThere(part);
          throw e;
        }
        // What did arrive is kept for the next attempt (which trusts the part's size, not this count).
        await flush().catch(() => {});
        if (opts.signal?.aborted) throw e;
        throw interrupted(label, offset, total, e);
      } finally {
        file.close();
      }
      if (offset < total) throw interrupted(label, offset, total);
    } else {
      await hashFile(part, hasher); // a complete part left by an earlier run: only the checks remain
    }
    const mismatch = hasher.mismatch();
    if (mismatch) {
      await removeIfThere(part);
      throw new HubError(`${label}: ${mismatch}; the download was deleted`);
    }
    await Deno.rename(part, dest);
  };

  for (let n = 0;; n++) {
    try {
      await attempt();
      return { status: resumed ? "resumed" : "downloaded", fetched };
    } catch (e) {
      if (opts.signal?.aborted) {
        throw new HubError(`${label}: interrupted; run the same pull again to resume`);
      }
      if (!(e instanceof HubError) || !e.retryable || n >= retries) throw e;
      opts.onRetry?.(e, n + 1);
      await sleep((opts.retryDelayMs ?? 500) * 2 ** n, opts.signal).catch(() => {
        throw new HubError(`${label}: interrupted; run the same pull again to resume`);
      });
    }
  }
}

function interrupted(label: string, offset: number, total: number, cause?: unknown): HubError {
  const why = cause ? ` (${(cause as Error).message ?? cause})` : "";
  return new HubError(
    `${label}: download interrupted at ${offset} of ${total} bytes${why}; run the same pull again to resume`,
    true,
  );
}
