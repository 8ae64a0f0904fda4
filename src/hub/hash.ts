// Owns content checks of downloaded files: sha256 (what the hub publishes for LFS files) and the git blob
// sha1 (the id of small files kept in git), both computed incrementally so a resumed download only has to
// re-read the part already on disk.
import { createHash, type Hash } from "node:crypto";

export interface Expected {
  size: number;
  /** sha256 of the content, published for LFS files. */
  sha256?: string;
  /** Git blob sha1 (sha1 of "blob <size>\0" + content), for regular git files. */
  gitSha1?: string;
}

/** Feeds bytes to the checks the expectation asks for and reports the first mismatch. */
export class ContentHasher {
  readonly #sha256?: Hash;
  readonly #sha1?: Hash;

  constructor(readonly expected: Expected) {
    if (expected.sha256) this.#sha256 = createHash("sha256");
    if (expected.gitSha1) {
      this.#sha1 = createHash("sha1");
      this.#sha1.update(`blob ${expected.size}\0`);
    }
  }

  update(chunk: Uint8Array): void {
    this.#sha256?.update(chunk);
    this.#sha1?.update(chunk);
  }

  /** `undefined` when every published hash matches, else a description of the mismatch. */
  mismatch(): string | undefined {
    if (this.#sha256) {
      const got = this.#sha256.digest("hex");
      if (got !== this.expected.sha256) {
        return `sha256 mismatch (expected ${this.expected.sha256}, got ${got})`;
      }
    }
    if (this.#sha1) {
      const got = this.#sha1.digest("hex");
      if (got !== this.expected.gitSha1) {
        return `git blob sha1 mismatch (expected ${this.expected.gitSha1}, got ${got})`;
      }
    }
    return undefined;
  }
}

/** Feeds the first `limit` bytes of a file (all of it when omitted) into `hasher`. */
export async function hashFile(path: string, hasher: ContentHasher, limit = Infinity): Promise<number> {
  using file = await Deno.open(path, { read: true });
  const buf = new Uint8Array(1 << 20);
  let total = 0;
  while (total < limit) {
    const n = await file.read(buf.subarray(0, Math.min(buf.length, limit - total)));
    if (n === null) break;
    hasher.update(buf.subarray(0, n));
    total += n;
  }
  return total;
}
