// Benchmarks speech to text through the server against whisper.cpp's own whisper-cli, built from the same
// source, on jfk.wav with the tiny.en- and base.en-shaped generated models, 2 threads, greedy decoding, in the
// same run. Runs are interleaved (server, cli, server, ...) so drift on a shared machine hits both alike; medians
// are reported. The server time is a whole HTTP request (upload, decode, resample, whisper_full, response); the
// cli figures are its own compute time (whisper_print_timings' total minus model load, what the server does per
// request) and its process wall time (which also loads the model every run).
// Usage: deno run -A bench/whisper_bench.ts [--runs 9] [--threads 2] [--shapes tiny.en,base.en] [--json out.json]
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { build, CLI_PATH } from "../native/build.ts";
import { type BenchShape, generateBench } from "../tools/models/whisper_tiny.ts";
import { parseConfig } from "../src/config.ts";
import { startServer } from "../src/server.ts";
import { whisperLoader } from "../src/engines/whisper/mod.ts";
import { median } from "./stats.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const JFK = join(ROOT, "..", "shared", "data", "whisper", "jfk.wav");
const AUDIO_SECONDS = 11;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "9" },
    threads: { type: "string", default: "2" },
    shapes: { type: "string", default: "tiny.en,base.en" },
    json: { type: "string" },
  },
});
const RUNS = Number(values.runs), THREADS = Number(values.threads);

async function cliRun(model: string): Promise<{ wallMs: number; computeMs: number; text: string }> {
  const t0 = performance.now();
  const out = await new Deno.Command(CLI_PATH, {
    // Timestamps stay on (as in the server): the generated models are wired to emit them.
    args: ["-m", model, "-f", JFK, "-t", String(THREADS), "-bs", "1", "-l", "en"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const wallMs = performance.now() - t0;
  if (!out.success) {
    throw new Error(`whisper-cli failed: ${new TextDecoder().decode(out.stderr).slice(-500)}`);
  }
  const log = new TextDecoder().decode(out.stderr);
  const ms = (label: string) => Number(new RegExp(`${label} time =\\s*([\\d.]+) ms`).exec(log)?.[1] ?? NaN);
  const text = new TextDecoder().decode(out.stdout).split("\n").map((l) =>
    l.replace(/^\[[^\]]*\]\s*/, "").trim()
  )
    .filter(Boolean).join(" ");
  return { wallMs, computeMs: ms("total") - ms("load"), text };
}

async function serverRun(
  url: string,
  wav: Uint8Array<ArrayBuffer>,
): Promise<{ wallMs: number; text: string }> {
  const form = new FormData();
  form.append("file", new Blob([wav], { type: "audio/wav" }), "jfk.wav");
  form.append("model", "bench");
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/audio/transcriptions`, { method: "POST", body: form });
  const body = await res.json();
  const wallMs = performance.now() - t0;
  if (!res.ok) throw new Error(`server: ${res.status} ${JSON.stringify(body)}`);
  return { wallMs, text: body.text };
}

async function benchShape(shape: BenchShape) {
  const model = await generateBench(shape);
  const dir = await Deno.makeTempDir({ prefix: "whisper-bench-" });
  const manifest = join(dir, "manifest.json");
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({
      models: { bench: { task: "transcription", path: model.slice(join(ROOT, "models").length + 1) } },
    }),
  );
  const { config } = parseConfig(
    [
      "--port=0",
      "--offline",
      "--preload",
      `--threads=${THREADS}`,
      `--manifest=${manifest}`,
      "--log-format=json",
    ],
    {},
    ROOT,
  );
  const quiet = { debug() {}, info() {}, warn() {}, error: (m: string, f?: unknown) => console.error(m, f) };
  const server = await startServer(config!, {
    loaders: { "whisper.cpp": { transcription: whisperLoader({ threads: THREADS, concurrency: 1 }) } },
    log: quiet,
  });
  const wav = await Deno.readFile(JFK);
  try {
    // Let the preload finish first: a request that waits on a load is not what is being measured.
    await server.registry.load(server.registry.find("bench")!);
    // Warm both: page cache, first state allocation, worker code.
    const warm = await serverRun(server.url, wav);
    const cliWarm = await cliRun(model);
    const server_: number[] = [], cliCompute: number[] = [], cliWall: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      server_.push((await serverRun(server.url, wav)).wallMs);
      const c = await cliRun(model);
      cliCompute.push(c.computeMs);
      cliWall.push(c.wallMs);
    }
    const s = median(server_), cc = median(cliCompute), cw = median(cliWall);
    return {
      shape,
      runs: RUNS,
      threads: THREADS,
      serverMs: Math.round(s),
      cliComputeMs: Math.round(cc),
      cliWallMs: Math.round(cw),
      ratioToCliCompute: +(s / cc).toFixed(3),
      ratioToCliWall: +(s / cw).toFixed(3),
      serverRtf: +(s / 1000 / AUDIO_SECONDS).toFixed(3),
      cliRtf: +(cc / 1000 / AUDIO_SECONDS).toFixed(3),
      sameText: warm.text.trim() === cliWarm.text,
      samples: { serverMs: server_.map(Math.round), cliComputeMs: cliCompute.map(Math.round) },
      text: warm.text,
    };
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Other busy processes (or a host that starves this VM) skew both sides; say so with the figures: the load
 * average and Linux's CPU pressure (share of the last 60 s in which runnable tasks waited for a CPU).
 */
async function loadAverage(): Promise<string> {
  const load = (await Deno.readTextFile("/proc/loadavg").catch(() => "")).split(" ").slice(0, 3).join(" ");
  const psi = /some avg10=\S+ avg60=(\S+)/.exec(
    await Deno.readTextFile("/proc/pressure/cpu").catch(() => ""),
  );
  return `${load || "n/a"}${psi ? `, cpu pressure ${psi[1]}%` : ""}`;
}

if (import.meta.main) {
  const loadBefore = await loadAverage();
  await build({
    ifMissing: true,
    force: false,
    portable: false,
    jobs: navigator.hardwareConcurrency || 2,
    cmakeArgs: [],
  });
  const results = [];
  for (const shape of values.shapes.split(",") as BenchShape[]) results.push(await benchShape(shape));
  console.log(
    `\njfk.wav (${AUDIO_SECONDS} s), ${THREADS} threads, greedy, median of ${RUNS} interleaved runs`,
  );
  console.log(`load average before: ${loadBefore}; after: ${await loadAverage()}\n`);
  console.log(
    "| model | server request | whisper-cli compute | server / cli | server RTF | cli RTF | cli process |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const r of results) {
    console.log(
      `| ${r.shape} | ${r.serverMs} ms | ${r.cliComputeMs} ms | ${r.ratioToCliCompute} | ${r.serverRtf} | ` +
        `${r.cliRtf} | ${r.cliWallMs} ms |`,
    );
  }
  for (const r of results) if (!r.sameText) console.log(`note: ${r.shape} transcripts differ`);
  if (values.json) await Deno.writeTextFile(values.json, JSON.stringify(results, null, 2) + "\n");
}
