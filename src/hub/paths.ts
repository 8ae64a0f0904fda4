// Owns path safety for downloads: repo ids and file names that come from the command line or from the hub
// API become local paths only through these checks, so neither a typo nor a hostile hub can make a pull
// write outside the models folder.
import { isAbsolute, join, relative, resolve } from "node:path";
import { HubError } from "./errors.ts";

/** Same shape the manifest accepts for `repo` (src/engines/manifest.ts): exactly owner/name. */
const REPO_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function isRepoId(s: string): boolean {
  return REPO_ID.test(s) && !s.includes("..");
}

export function checkRepoId(repo: string): string {
  if (!isRepoId(repo)) throw new HubError(`"${repo}" is not a hub repo id (expected owner/name)`);
  return repo;
}

/**
 * Checks a repo file name as the hub API returns it (`rfilename`): a relative POSIX path with no empty,
 * `.` or `..` segment, no backslash, drive letter, control character or trailing slash. Returns it as is.
 */
export function checkRepoFile(name: unknown): string {
  const bad = (why: string) => new HubError(`unsafe file name from the hub ${JSON.stringify(name)}: ${why}`);
  if (typeof name !== "string" || name.length === 0) throw bad("empty");
  if (name.length > 1024) throw bad("too long");
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) throw bad("control character");
  if (name.includes("\\")) throw bad("backslash");
  if (name.startsWith("/") || isAbsolute(name) || /^[A-Za-z]:/.test(name)) throw bad("absolute path");
  for (const seg of name.split("/")) {
    if (seg === "") throw bad("empty path segment");
    if (seg === "." || seg === "..") throw bad(`"${seg}" segment`);
  }
  return name;
}

/** The local path of repo file `name` under `root`, refusing anything that would land outside it. */
export function destinationOf(root: string, name: string): string {
  checkRepoFile(name);
  const full = resolve(join(root, name));
  const rel = relative(resolve(root), full);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
    throw new HubError(`unsafe file name from the hub "${name}": outside ${root}`);
  }
  return full;
}

/**
 * Guards against symlinks: once the folders exist, the real path of `dir` must still be inside the real path
 * of `root` (a link planted inside a repo folder must not redirect a download elsewhere).
 */
export async function assertRealInside(root: string, dir: string): Promise<void> {
  const [r, d] = await Promise.all([Deno.realPath(root), Deno.realPath(dir)]);
  const rel = relative(r, d);
  if (rel.startsWith("..") || isAbsolute(rel)) {
    throw new HubError(`${dir} resolves to ${d}, outside ${r}`);
  }
}

/** Where a hub repo's files live inside the models folder (the manifest points repo entries there). */
export function hubPath(modelsDir: string, repo: string): string {
  return join(modelsDir, "hub", ...repo.split("/"));
}
