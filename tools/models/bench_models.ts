// Owns `deno task models:bench`: generates the real-size, random-weight benchmark models on demand into
// models/generated/bench/<name>/ (gitignored, never committed), skipping folders whose `.generated` marker
// matches the generator's VERSION. Flags: --force regenerates, --only a,b picks some.
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { ensureGenerated, type Generator } from "../ensure_models.ts";
import * as minilm from "./bench_minilm.ts";
import * as smollm2 from "./bench_smollm2.ts";

export const BENCH_DIR = fileURLToPath(new URL("../../models/generated/bench/", import.meta.url));

const BENCH_MODELS: Record<string, Generator> = {
  "smollm2-135m-instruct": smollm2,
  "smollm2-135m-gqa": smollm2.gqa,
  "smollm2-135m-layouts": smollm2.layouts,
  "all-minilm-l6-v2": minilm,
};

export function ensureBenchModels(opts: { force?: boolean; only?: string[] } = {}): Promise<void> {
  return ensureGenerated(BENCH_MODELS, BENCH_DIR, opts);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { force: { type: "boolean", default: false }, only: { type: "string" } },
  });
  await ensureBenchModels({ force: values.force, only: values.only?.split(",") });
}
