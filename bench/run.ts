// Owns `deno task bench`: generates the benchmark models when missing, then runs every benchmark in its own
// process (one at a time, so they don't compete for the 2 cores) and collects their markdown tables into
// .bench/results.md. `--only chat,embeddings` picks some.
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { ensureBenchModels } from "../tools/models/bench_models.ts";

const BENCHES = [
  "chat",
  "llama",
  "onnx",
  "responsiveness",
  "embeddings",
  "whisper",
  "constrain",
  "constrained_decode",
  "load",
  "isolation",
  "sampler",
];
const root = fileURLToPath(new URL("../", import.meta.url));

const { values } = parseArgs({ args: Deno.args, options: { only: { type: "string" } } });
const only = values.only?.split(",") ?? BENCHES;

await ensureBenchModels();
const sections: string[] = [
  `# Benchmarks (${new Date().toISOString()}, ${navigator.hardwareConcurrency} cores)`,
];
let failed = 0;
for (const name of BENCHES.filter((b) => only.includes(b))) {
  const file = join(root, "bench", `${name}_bench.ts`);
  try {
    await Deno.stat(file);
  } catch {
    console.error(`skip ${name}: ${file} is missing`);
    continue;
  }
  console.error(`--- ${name}`);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", file],
    cwd: root,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  console.log(text);
  if (!out.success) failed++;
  sections.push(`## ${name}${out.success ? "" : " (failed)"}\n\n${text.trim()}`);
}
await Deno.mkdir(join(root, ".bench"), { recursive: true });
await Deno.writeTextFile(join(root, ".bench", "results.md"), sections.join("\n\n") + "\n");
console.error(`results in .bench/results.md${failed ? `; ${failed} benchmark(s) failed` : ""}`);
if (failed) Deno.exit(1);
