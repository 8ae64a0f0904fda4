// Owns `deno task models:bench`: generates the real-size, random-weight benchmark models on demand into
// models/generated/bench/<name>/ (gitignored, never committed), skipping folders whose `.generated` marker
// matches the generator's VERSION. Flags: --force regenerates, --only a,b picks some.
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import * as minilm from "./bench_minilm.ts";
import * as smollm2 from "./bench_smollm2.ts";

export const BENCH_DIR = fileURLToPath(new URL("../../models/generated/bench/", import.meta.url));

const BENCH_MODELS: Record<string, { VERSION: string; generate(dir: string): Promise<void> }> = {
  "smollm2-135m-instruct": smollm2,
  "all-minilm-l6-v2": minilm,
};

export async function ensureBenchModels(opts: { force?: boolean; only?: string[] } = {}): Promise<void> {
  for (const [name, gen] of Object.entries(BENCH_MODELS)) {
    if (opts.only && !opts.only.includes(name)) continue;
    const dir = join(BENCH_DIR, name);
    const marker = await Deno.readTextFile(join(dir, ".generated")).catch(() => "");
    if (!opts.force && marker.trim() === gen.VERSION) continue;
    const started = performance.now();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    await Deno.mkdir(dir, { recursive: true });
    await gen.generate(dir);
    await Deno.writeTextFile(join(dir, ".generated"), gen.VERSION + "\n");
    console.log(`generated bench/${name} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { force: { type: "boolean", default: false }, only: { type: "string" } },
  });
  await ensureBenchModels({ force: values.force, only: values.only?.split(",") });
}
