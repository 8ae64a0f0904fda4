// Generates the project's own test models into models/generated/ when they are missing or stale.
// Each generator module (tools/models/<name>.ts) exports `VERSION` and `generate(outDir)`; a model folder is
// current when its `.generated` marker holds that VERSION. `--force` regenerates all; `--only a,b` picks some.
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

export interface Generator {
  VERSION: string;
  generate(outDir: string): Promise<void>;
}

/** name -> module path (relative to this file). */
const GENERATORS: Record<string, string> = {
  "chat-tiny": "./models/chat_tiny.ts",
  "think-tiny": "./models/think_tiny.ts",
  "agent-tiny": "./models/agent_tiny.ts",
  "embed-tiny": "./models/embed_tiny.ts",
  "whisper-tiny-test": "./models/whisper_tiny.ts",
  "whisper-multi-test": "./models/whisper_multi.ts",
};

export const GENERATED_DIR = fileURLToPath(new URL("../models/generated/", import.meta.url));

/** Generates each missing or stale model of `generators` into `baseDir/<name>/`. */
export async function ensureGenerated(
  generators: Record<string, Generator | string>,
  baseDir: string,
  opts: { force?: boolean; only?: string[] } = {},
): Promise<void> {
  for (const [name, genOrPath] of Object.entries(generators)) {
    if (opts.only && !opts.only.includes(name)) continue;
    const gen = typeof genOrPath === "string" ? (await import(genOrPath)) as Generator : genOrPath;
    const dir = join(baseDir, name);
    const marker = await Deno.readTextFile(join(dir, ".generated")).catch(() => "");
    if (!opts.force && marker.trim() === gen.VERSION) continue;
    const started = performance.now();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.mkdir(dir, { recursive: true });
    await gen.generate(dir);
    await Deno.writeTextFile(join(dir, ".generated"), gen.VERSION + "\n");
    console.log(`generated ${name} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

export async function ensureModels(opts: { force?: boolean; only?: string[] } = {}): Promise<void> {
  const { CHAT_TINY_VARIANTS } = await import("./models/chat_tiny_layouts.ts");
  const { PLAYBACK_GENERATORS } = await import("./models/playback_families.ts");
  return ensureGenerated(
    { ...GENERATORS, ...CHAT_TINY_VARIANTS, ...PLAYBACK_GENERATORS },
    GENERATED_DIR,
    opts,
  );
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { force: { type: "boolean", default: false }, only: { type: "string" } },
  });
  await ensureModels({ force: values.force, only: values.only?.split(",") });
}
