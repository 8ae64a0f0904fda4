// Benchmark of POST /v1/embeddings against the same model called in-process, in one run: throughput (inputs/s)
// of (a) one request with 32 inputs, (b) 32 concurrent single-input requests, (c) 32 sequential single-input
// requests, all through the real server over HTTP with the official `openai` client (its default base64 path),
// and (in-process) tokenize + one model call on the same 32 inputs. CPU, 2 threads by default.
// Goals: (a) >= 95% of in-process; (b) >= 80% of (a). Prints a markdown table and the ratios.
//
//   deno run -A bench/embeddings_bench.ts [--model DIR] [--rounds 15] [--threads 2] [--inputs 32]
//                                         [--window-ms N] [--batch-tokens N]
// DIR defaults to the generated all-MiniLM-L6-v2-shaped model (`deno task models:bench`), else embed-tiny;
// the first line of the output names the model used.
import { parseArgs } from "node:util";
import { basename, dirname, join, resolve } from "node:path";
import OpenAI from "openai";
import { parseConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { startServer } from "../src/server.ts";
import { builtinLoaders } from "../src/loaders.ts";
import type { EmbeddingEngine } from "../src/engines/types.ts";
import { firstModelDir, median } from "./stats.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** The all-MiniLM-L6-v2-shaped model of `deno task models:bench`, else embed-tiny. */
const CANDIDATES = ["models/generated/bench/all-minilm-l6-v2", "models/generated/embed-tiny"];

const WORDS = (
  "the people of the river town build small boats from old wood and paint them blue before the summer " +
  "market where farmers sell fresh bread cheese apples honey and warm soup to travelers who arrive early " +
  "in the morning with maps questions stories music children dogs and heavy bags full of books letters " +
  "tools seeds and gifts for friends living near the mountain lake under a clear sky"
).split(" ");

/** `n` distinct sentences of `words` words, deterministic. */
function sentences(n: number, words: number): string[] {
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  return Array.from({ length: n }, (_, i) => {
    const w = Array.from({ length: words }, () => WORDS[Math.floor(next() * WORDS.length)]);
    w[0] = w[0][0].toUpperCase() + w[0].slice(1);
    return `${w.join(" ")} ${i}.`;
  });
}

const { values } = parseArgs({
  args: Deno.args,
  options: {
    model: { type: "string" },
    rounds: { type: "string", default: "15" },
    threads: { type: "string", default: "2" },
    inputs: { type: "string", default: "32" },
    words: { type: "string", default: "16" },
    "window-ms": { type: "string" },
    "batch-tokens": { type: "string" },
  },
});

const modelDir = resolve(values.model ?? firstModelDir(ROOT, CANDIDATES));
const rounds = Number(values.rounds);
const n = Number(values.inputs);
const texts = sentences(n, Number(values.words));

const tmp = await Deno.makeTempDir({ prefix: "embed-bench-" });
const manifest = join(tmp, "manifest.json");
await Deno.writeTextFile(
  manifest,
  JSON.stringify({
    models: { bench: { task: "embedding", path: basename(modelDir), dtype: "fp32", device: "cpu" } },
  }),
);
const flags = [
  "--port=0",
  `--models-dir=${dirname(modelDir)}`,
  `--manifest=${manifest}`,
  "--device=cpu",
  `--threads=${values.threads}`,
  "--offline",
  "--preload=false",
  ...(values["window-ms"] ? [`--embed-batch-window-ms=${values["window-ms"]}`] : []),
  ...(values["batch-tokens"] ? [`--embed-batch-tokens=${values["batch-tokens"]}`] : []),
];
const { config } = parseConfig(flags, {}, ROOT);
const logs: string[] = [];
const server = await startServer(config!, {
  loaders: builtinLoaders(config!),
  log: createLogger("json", (l) => logs.push(l)),
});
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "bench", maxRetries: 0 });

try {
  const entry = server.registry.resolve("bench", "embedding");
  const engine = await server.registry.engine<EmbeddingEngine>(entry);
  const tokens = await engine.tokenize(texts);
  const tokenCounts = tokens.map((t) => t.length);

  const scenarios: Record<string, () => Promise<unknown>> = {
    // The engine is the model's worker: tokenize and one model call, without HTTP.
    "in-process (tokenize + one model call)": async () => engine.embedBatch(await engine.tokenize(texts)),
    "(a) 1 request x 32 inputs": () => client.embeddings.create({ model: "bench", input: texts }),
    "(b) 32 concurrent 1-input requests": () =>
      Promise.all(texts.map((t) => client.embeddings.create({ model: "bench", input: t }))),
    "(c) 32 sequential 1-input requests": async () => {
      for (const t of texts) await client.embeddings.create({ model: "bench", input: t });
    },
  };
  const names = Object.keys(scenarios);

  // Same vectors both ways (base64 decoded by the SDK vs in-process floats).
  const direct = await engine.embedBatch(tokens);
  const served = await client.embeddings.create({ model: "bench", input: texts });
  const worst = Math.max(
    ...served.data.map((d, i) => Math.max(...d.embedding.map((x, k) => Math.abs(x - direct[i][k])))),
  );
  if (worst > 1e-5) throw new Error(`served vectors differ from in-process ones by ${worst}`);

  for (let w = 0; w < 3; w++) for (const name of names) await scenarios[name]();
  const times: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  const stats = () => server.registry.admission.batches().find((s) => s.model === "bench")!.stats;
  const batchesOf: Record<string, number> = Object.fromEntries(names.map((k) => [k, 0]));
  // Interleaved rounds so drift (thermal, other load) hits every scenario alike.
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      const before = stats().batches;
      const t0 = performance.now();
      await scenarios[name]();
      times[name].push(performance.now() - t0);
      batchesOf[name] += stats().batches - before;
    }
  }

  const callsPerRound = (name: string) =>
    name.startsWith("in-process") ? "1" : (batchesOf[name] / rounds).toFixed(1);
  const rate = (name: string) => n / (median(times[name]) / 1000);
  // Ratios per round (scenarios ran back to back), then their median: robust to load that drifts over the run.
  const ratio = (num: string, den: string) => median(times[den].map((t, r) => t / times[num][r]));
  const [inproc, a, b, c] = names;
  const goalA = ratio(a, inproc);
  const goalB = ratio(b, a);
  const tokenRange = `${Math.min(...tokenCounts)}-${Math.max(...tokenCounts)}`;
  const lines = [
    `Model: ${modelDir} (${engine.dimensions} dims, ${engine.backend}), threads ${values.threads}, ` +
    `${n} inputs of ${values.words} words (${tokenRange} tokens), ${rounds} rounds, ` +
    `batch window ${config!.embedBatchWindowMs} ms, budget ${config!.embedBatchTokens} tokens.`,
    "",
    "| scenario | median ms / 32 inputs | inputs/s | vs in-process | model calls / round |",
    "|---|---:|---:|---:|---:|",
    ...names.map((name) =>
      `| ${name} | ${median(times[name]).toFixed(1)} | ${rate(name).toFixed(0)} | ` +
      `${(ratio(name, inproc) * 100).toFixed(1)}% | ${callsPerRound(name)} |`
    ),
    "",
    `(a) / in-process: ${(goalA * 100).toFixed(1)}% (goal >= 95%) ${goalA >= 0.95 ? "met" : "NOT met"}`,
    `(b) / (a): ${(goalB * 100).toFixed(1)}% (goal >= 80%) ${goalB >= 0.8 ? "met" : "NOT met"}`,
    `(c) / (a): ${(ratio(c, a) * 100).toFixed(1)}% (no batching possible: one request at a time)`,
    "Ratios are medians of per-round ratios (throughput ratio = time ratio inverted).",
  ];
  console.log(lines.join("\n"));
} finally {
  await server.shutdown();
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
}
