// Benchmarks speech to text through the server against whisper.cpp itself, built from the same source, on
// jfk.wav with the tiny.en- and base.en-shaped generated models, 2 threads, greedy decoding, in the same run.
// Each comparison gives both sides the same state, and alternates which side goes first (drift and cache
// effects hit both alike); medians are reported:
// - warm: a whole HTTP request to a server whose model is loaded (upload, decode, resample, whisper_full,
//   response) against whisper.cpp's whisper_full on a loaded model and a warmed state in this process (the
//   same PCM, decoded once);
// - cold: a fresh server process answering its first request (start, load, transcribe) against a fresh
//   whisper-cli process (load, transcribe), both wall time.
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
import { cstr, openWhisper, OPTIONS_SIZE, type WhisperLib } from "../src/engines/whisper/ffi.ts";
import { decodeAudio } from "../src/audio/decode.ts";
import { spawnServer } from "../tests/helpers.ts";

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

/** whisper.cpp's own whisper_full on a loaded model and a reused state: the warm baseline. */
class DirectWhisper {
  readonly #opts = new DataView(new ArrayBuffer(OPTIONS_SIZE));
  private constructor(
    readonly lib: WhisperLib,
    readonly ctx: Deno.PointerObject,
    readonly state: Deno.PointerObject,
  ) {
    // The server's options (src/engines/whisper/engine.ts): timestamps on, temperature 0 with whisper's
    // default 0.2 fallback step, greedy.
    this.#opts.setInt32(0, THREADS, true);
    this.#opts.setFloat32(20, 0.2, true);
  }

  static async open(model: string): Promise<DirectWhisper> {
    const lib = await openWhisper();
    const ctx = await lib.shim.wshim_init(cstr(model), 0, -1, -1, new Float64Array(1));
    if (!ctx) throw new Error(`whisper.cpp could not load ${model}`);
    const state = await lib.shim.wshim_init_state(ctx, new Float64Array(1));
    if (!state) throw new Error("whisper_init_state failed");
    return new DirectWhisper(lib, ctx, state);
  }

  async run(pcm: Float32Array): Promise<number> {
    const { shim } = this.lib;
    const job = shim.wshim_job_new()!;
    const t0 = performance.now();
    const rc = await shim.wshim_full(
      this.ctx,
      this.state,
      job,
      this.#opts,
      cstr("en"),
      null,
      pcm,
      pcm.length,
    );
    const ms = performance.now() - t0;
    shim.wshim_job_free(job);
    if (rc !== 0) throw new Error(`whisper_full failed: ${rc}`);
    return ms;
  }

  close(): void {
    this.lib.whisper.whisper_free_state(this.state);
    this.lib.whisper.whisper_free(this.ctx);
  }
}

/** Runs a and b `n` times each, alternating which goes first; returns their samples. */
async function alternate(n: number, a: () => Promise<number>, b: () => Promise<number>) {
  const as: number[] = [], bs: number[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      as.push(await a());
      bs.push(await b());
    } else {
      bs.push(await b());
      as.push(await a());
    }
  }
  return [as, bs] as const;
}

async function benchShape(shape: BenchShape) {
  const model = await generateBench(shape);
  const dir = await Deno.makeTempDir({ prefix: "whisper-bench-" });
  const manifest = join(dir, "manifest.json");
  const manifestJson = {
    models: { bench: { task: "transcription" as const, path: model.slice(join(ROOT, "models").length + 1) } },
  };
  await Deno.writeTextFile(manifest, JSON.stringify(manifestJson));
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
  const pcm = await decodeAudio(wav);
  const direct = await DirectWhisper.open(model);
  try {
    // Let the preload finish first: a request that waits on a load is not what is being measured.
    await server.registry.load(server.registry.find("bench")!);
    // Warm both sides alike: page cache, first use of the state's buffers.
    const warm = await serverRun(server.url, wav);
    await direct.run(pcm);
    const cliWarm = await cliRun(model);
    const [serverWarm, directWarm] = await alternate(
      RUNS,
      async () => (await serverRun(server.url, wav)).wallMs,
      () => direct.run(pcm),
    );
    // Cold: a new process each run on both sides.
    const coldServer = async () => {
      const t0 = performance.now();
      const s = await spawnServer({ manifest: manifestJson, flags: [`--threads=${THREADS}`] });
      try {
        await serverRun(s.url, wav);
        return performance.now() - t0;
      } finally {
        await s.stop();
      }
    };
    const [serverCold, cliCold] = await alternate(RUNS, coldServer, async () => (await cliRun(model)).wallMs);
    const sw = median(serverWarm), dw = median(directWarm), sc = median(serverCold), cc = median(cliCold);
    return {
      shape,
      runs: RUNS,
      threads: THREADS,
      serverWarmMs: Math.round(sw),
      directWarmMs: Math.round(dw),
      warmRatio: +(sw / dw).toFixed(3),
      serverColdMs: Math.round(sc),
      cliColdMs: Math.round(cc),
      coldRatio: +(sc / cc).toFixed(3),
      serverRtf: +(sw / 1000 / AUDIO_SECONDS).toFixed(3),
      sameText: warm.text.trim() === cliWarm.text,
      samples: {
        serverWarmMs: serverWarm.map(Math.round),
        directWarmMs: directWarm.map(Math.round),
        serverColdMs: serverCold.map(Math.round),
        cliColdMs: cliCold.map(Math.round),
      },
      text: warm.text,
    };
  } finally {
    direct.close();
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
    gpu: "cpu",
  });
  const results = [];
  for (const shape of values.shapes.split(",") as BenchShape[]) results.push(await benchShape(shape));
  console.log(
    `\njfk.wav (${AUDIO_SECONDS} s), ${THREADS} threads, greedy, median of ${RUNS} runs, order alternating`,
  );
  console.log(`load average before: ${loadBefore}; after: ${await loadAverage()}\n`);
  console.log(
    "| model | warm: server request | warm: whisper_full in-process | warm ratio | cold: new server process, " +
      "first request | cold: new whisper-cli process | cold ratio | server RTF |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    console.log(
      `| ${r.shape} | ${r.serverWarmMs} ms | ${r.directWarmMs} ms | ${r.warmRatio} | ${r.serverColdMs} ms | ` +
        `${r.cliColdMs} ms | ${r.coldRatio} | ${r.serverRtf} |`,
    );
  }
  for (const r of results) if (!r.sameText) console.log(`note: ${r.shape} transcripts differ`);
  if (values.json) await Deno.writeTextFile(values.json, JSON.stringify(results, null, 2) + "\n");
}
