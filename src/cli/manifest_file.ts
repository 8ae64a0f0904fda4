// Owns editing the manifest file from the command line: read it (or start an empty one), add or update one
// model entry while keeping every other entry and key order, validate the result with the server's own
// parser, and replace the file atomically so a crash never leaves half a manifest.
import { dirname } from "node:path";
import { parseManifest } from "../engines/manifest.ts";

export interface ManifestDoc {
  defaults: Record<string, string>;
  aliases: Record<string, string>;
  models: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

export class ManifestFileError extends Error {
  override name = "ManifestFileError";
}

export async function readManifestDoc(path: string): Promise<{ doc: ManifestDoc; existed: boolean }> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      return { doc: { defaults: {}, aliases: {}, models: {} }, existed: false };
    }
    throw new ManifestFileError(`cannot read manifest ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ManifestFileError(`manifest ${path} is not JSON: ${(e as Error).message}`);
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) {
    throw new ManifestFileError(`manifest ${path} is not a JSON object`);
  }
  const doc = json as ManifestDoc;
  doc.defaults ??= {};
  doc.aliases ??= {};
  doc.models ??= {};
  return { doc, existed: true };
}

/** The model id an alias (or `@task` alias) points to, if `name` is an alias of the document. */
export function aliasTarget(doc: ManifestDoc, name: string): string | undefined {
  const t = doc.aliases[name];
  if (t === undefined) return undefined;
  return t.startsWith("@") ? doc.defaults[t.slice(1)] : t;
}

/** Throws with the server's own message if the document would not load. */
export function validateDoc(doc: ManifestDoc, modelsDir: string): void {
  try {
    parseManifest(doc, modelsDir, "auto");
  } catch (e) {
    throw new ManifestFileError((e as Error).message);
  }
}

/** Writes the document as tidy JSON (two-space indent, final newline) through a temp file and a rename. */
export async function writeManifestDoc(path: string, doc: ManifestDoc, modelsDir: string): Promise<void> {
  validateDoc(doc, modelsDir);
  await Deno.mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${Deno.pid}.tmp`;
  try {
    await Deno.writeTextFile(tmp, JSON.stringify(doc, null, 2) + "\n");
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw new ManifestFileError(`cannot write manifest ${path}: ${(e as Error).message}`);
  }
}
