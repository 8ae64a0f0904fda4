// Owns the side-by-side benchmark against the peer users would otherwise run: llama.cpp's own `llama-server`
// on the same GGUF file, the same machine and the same load, in one run, both servers up together and every
// load alternating between them burst by burst (which goes first alternates by round). Per file and round:
// bursts of N streamed chats arriving together (N from --streams), each with a prompt of ~--prompt-tokens
// tokens that shares no prefix with any other request (a request-unique opening; a warm-up no measured request
// shares), exactly --new-tokens new tokens, under three workloads: temperature 1 with a per-request seed
// (ignore_eos), greedy (temperature 0, --greedy-streams), and a json_schema answer too long to finish
// (--json-streams), and sampled again after a churn of requests of mixed lengths that leaves the slots used in
// scattered order (--mixed-streams; the churn is --parallel requests); one long prompt alone for prefill
// speed; and, with --embed-gguf, bursts of --embed-requests embedding requests on that file (llama-server
// --embeddings). /health is polled every 20 ms throughout. Reports medians over rounds of per-stream decode
// tok/s, aggregate tok/s, TTFT p50/max, prefill tok/s, embedding inputs/s, /health p99 and the server's CPU
// per /health (polled as the probe does, with nothing else running), each with its ratio to llama-server. A
// chat load's ratio is the median of its pairs' ratios (a pair: the same burst on both servers, back to back;
// for embeddings, two bursts back to back), not the ratio of the two medians: the VM's speed drifts between
// rounds, which a pair mostly does not see. A one-stream burst is short and the most sensitive to that drift,
// so it runs as --one-stream-pairs pairs a round (each pair's order alternating); so does an embeddings burst
// (~0.2 s), as --embed-pairs pairs a round. A burst of several streams runs as --burst-pairs pairs a round: its
// first tokens are one prompt round of llama.cpp's compute on both servers, so its pairs' ratios sit close to
// 1.0 and one pair's drift decides a median of three (8 sampled Q4_0 prompts, 8 alternating pairs in one run:
// 0.91-1.00, median 0.97; medians of three pairs put the burst rows' first tokens anywhere from 0.86 to 1.02
// over four runs).
// Every stream is checked to have produced its tokens; a greedy stream whose tokens print nothing has no
// decode figure.
// Usage: deno run -A bench/peer_bench.ts --llama-server BIN --gguf FILE[,FILE] [--embed-gguf FILE]
//   [--streams 1,4,8,16] [--greedy-streams 1,8] [--json-streams 8] [--mixed-streams 8] [--parallel N]
//   [--rounds 2] [--one-stream-pairs 5] [--burst-pairs 2] [--new-tokens 64]
//   [--prompt-tokens 250] [--threads N] [--gpu-layers N] [--llama-lib DIR] [--ctx 2048] [--json OUT.json]
//   [--llama-bench BIN] [--embed-requests 32] [--embed-repeat 4] [--embed-pairs 4]
// With --llama-bench, libllama's own loop on the same file is the baseline of one stream too: llama-bench's
// tg (--new-tokens) against this server's one-stream decode, and its pp (--prefill-tokens) against the prefill;
// its tg at depth runs again right after each one-stream sampled pair, for a ratio taken within the pair.
import { parseArgs } from "node:util";
import { basename } from "node:path";
import {
  burst,
  type BurstResult,
  chat,
  embeddingBurst,
  healthCpu,
  words,
  type Workload,
} from "./peer_load.ts";
import { type Server, type ServerOptions, startLlamaServer, startOurs } from "./peer_servers.ts";
import { median, percentile } from "./stats.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    "llama-server": { type: "string" },
    "llama-bench": { type: "string" },
    gguf: { type: "string" },
    "embed-gguf": { type: "string" },
    streams: { type: "string", default: "1,4,8,16" },
    "greedy-streams": { type: "string", default: "1,8" },
    "json-streams": { type: "string", default: "8" },
    "mixed-streams": { type: "string", default: "8" },
    /** Slots of both servers (default: the most streams of any load). */
    parallel: { type: "string" },
    rounds: { type: "string", default: "2" },
    "one-stream-pairs": { type: "string", default: "5" },
    "burst-pairs": { type: "string", default: "2" },
    "new-tokens": { type: "string", default: "64" },
    "prompt-tokens": { type: "string", default: "250" },
    "prefill-tokens": { type: "string", default: "512" },
    "embed-requests": { type: "string", default: "32" },
    "embed-repeat": { type: "string", default: "4" },
    "embed-pairs": { type: "string", default: "4" },
    threads: { type: "string", default: String(navigator.hardwareConcurrency) },
    "gpu-layers": { type: "string", default: "-1" },
    "llama-lib": { type: "string" },
    ctx: { type: "string", default: "2048" },
    json: { type: "string" },
  },
});
if (!values["llama-server"] || (!values.gguf && !values["embed-gguf"])) {
  console.error("usage: --llama-server BIN --gguf FILE[,FILE] (see the header of bench/peer_bench.ts)");
  Deno.exit(2);
}
const list = (s: string) => s.split(",").filter(Boolean).map(Number);
const LOADS: [Workload, number[]][] = [
  ["sampled", list(values.streams!)],
  ["greedy", list(values["greedy-streams"]!)],
  ["json", list(values["json-streams"]!)],
  ["mixed", list(values["mixed-streams"]!)],
];
const ROUNDS = Number(values.rounds);
const ONE_STREAM_PAIRS = Math.max(1, Number(values["one-stream-pairs"]));
const BURST_PAIRS = Math.max(1, Number(values["burst-pairs"]));
const NEW = Number(values["new-tokens"]);
const THREADS = values.threads!;
const CTX = Number(values.ctx);
const PARALLEL = Number(values.parallel ?? Math.max(...LOADS.flatMap(([, n]) => n)));
const GPU_LAYERS = Number(values["gpu-layers"]);
const GPU = GPU_LAYERS !== 0;
// Words per prompt, sized once per file from what the model's tokenizer makes of them (see calibrate()).
let PROMPT_WORDS = 0;
let PREFILL_WORDS = 0;
let nextId = 1;
const ids = () => nextId++;

function options(file: string, task: "chat" | "embedding"): ServerOptions {
  return {
    file,
    task,
    parallel: task === "chat" ? PARALLEL : Number(values["embed-requests"]),
    ctx: task === "chat" ? CTX : 512,
    threads: THREADS,
    gpuLayers: GPU_LAYERS,
    ...(values["llama-lib"] ? { llamaLib: values["llama-lib"] } : {}),
  };
}

/**
 * Both servers on the file, up together for the whole file: the measured loads alternate between them burst by
 * burst (which goes first alternates by round). This VM's speed drifts 10-30% over minutes (llama-bench's
 * tg64 157, 181, 161 at three runs' starts), and a round of every load on one server, then on the other, put
 * minutes between the two sides of a cell (one run: llama-server's 8 greedy streams at 23.3 tok/s in one
 * round, 14.9 in the next). An idle server costs the other nothing (neither used a CPU second in 15 s idle).
 */
async function startBoth(file: string, task: "chat" | "embedding"): Promise<Server[]> {
  const servers: Server[] = [];
  try {
    for (const start of starters(file, task)) servers.push(await start());
  } catch (e) {
    for (const s of servers) await s.stop();
    throw e;
  }
  return servers;
}

const starters = (file: string, task: "chat" | "embedding") => [
  () => startLlamaServer(values["llama-server"]!, options(file, task)),
  () =>
    startOurs(
      options(file, task),
      (url) =>
        task === "chat" ? chat(url, "warm up " + words(9999, 20), 4, 1) : embeddingBurst(url, 1, 1, ids, 5),
    ),
];

/** Sizes the prompts for this file's tokenizer: tokens per word measured on the first server started. */
async function calibrate(s: Server): Promise<void> {
  const small = await chat(s.url, words(nextId++, 0), 1, 0);
  const big = await chat(s.url, words(nextId++, 200), 1, 0);
  const perWord = (big.promptTokens - small.promptTokens) / 200;
  const overhead = small.promptTokens;
  PROMPT_WORDS = Math.max(1, Math.round((Number(values["prompt-tokens"]) - overhead) / perWord));
  PREFILL_WORDS = Math.max(1, Math.round((Number(values["prefill-tokens"]) - overhead) / perWord));
}

/** Prompt tokens per second of one long prompt alone (its time to first token), best of three. */
async function prefill(s: Server): Promise<{ tokens: number; perSecond: number }> {
  let best = 0;
  let tokens = 0;
  for (let i = 0; i < 3; i++) {
    const id = nextId++;
    const r = await chat(s.url, words(id, PREFILL_WORDS), 1, id);
    tokens = r.promptTokens;
    best = Math.max(best, r.promptTokens / (r.ttft / 1000));
  }
  return { tokens, perSecond: best };
}

/**
 * llama-bench's pp and tg tok/s on the file (same threads and GPU layers as the servers): tg from an empty
 * context (the baseline) and tg after --prompt-tokens cells (`-d`), the depth a measured stream
 * decodes at: on a small model every token's attention over those cells is a third of its step, so only
 * the second isolates what a server adds per token.
 */
async function llamaBench(file: string): Promise<Bench | undefined> {
  if (!values["llama-bench"]) return undefined;
  const runs = await llamaBenchRuns(file, values["prefill-tokens"]!, `0,${values["prompt-tokens"]}`, 3);
  const tg = (deep: boolean) =>
    runs.find((r) => r.n_gen > 0 && r.n_prompt === 0 && ((r.n_depth ?? 0) > 0) === deep)?.avg_ts ?? NaN;
  return {
    pp: runs.find((r) => r.n_prompt > 0 && r.n_gen === 0 && !r.n_depth)?.avg_ts ?? NaN,
    tg: tg(false),
    tgDeep: tg(true),
  };
}

/** llama-bench's JSON runs on the file: pp `prompt`, tg --new-tokens at each of `depths`, `reps` each. */
async function llamaBenchRuns(file: string, prompt: string, depths: string, reps: number) {
  const args = [
    "-m",
    file,
    "-p",
    prompt,
    "-n",
    values["new-tokens"]!,
    "-d",
    depths,
    "-t",
    THREADS,
    "-ngl",
    GPU ? "999" : "0",
    "-r",
    String(reps),
    "-o",
    "json",
  ];
  const out = await new Deno.Command(values["llama-bench"]!, { args, stdout: "piped", stderr: "null" })
    .output();
  if (!out.success) throw new Error(`llama-bench failed on ${file}`);
  return JSON.parse(new TextDecoder().decode(out.stdout)) as {
    n_prompt: number;
    n_gen: number;
    n_depth?: number;
    avg_ts: number;
  }[];
}

interface Bench {
  pp: number;
  tg: number;
  tgDeep: number;
}

/**
 * llama-bench's tg (--new-tokens) after --prompt-tokens cells, once (-r 1), run right after a one-stream pair
 * while both servers are idle: the engine-limit ratio is taken within the pair, as the servers' are. Measured
 * once at the start of a file, llama-bench's figure lay minutes from most streams it was divided into, and this
 * VM's speed drifts 10-30% over minutes (the ratio moved 0.89-0.97 between runs).
 */
async function llamaBenchTg(file: string): Promise<number> {
  const runs = await llamaBenchRuns(file, "0", values["prompt-tokens"]!, 1);
  return runs.find((r) => r.n_gen > 0)?.avg_ts ?? NaN;
}

interface Row extends Omit<BurstResult, "health"> {
  file: string;
  workload: Workload;
  streams: number;
  server: string;
  /** The same burst on both servers, back to back, shares a pair number (ratios are taken within a pair). */
  pair: number;
}
let nextPair = 0;
const rows: Row[] = [];
const prefills: { file: string; server: string; tokens: number; perSecond: number }[] = [];
/** Server CPU per /health polled every 20 ms, idle (peer_load.ts healthCpu), per server, per file. */
const healthCosts: { file: string; server: string; ms: number }[] = [];
/** Embedding bursts; `pair` pairs the two servers' bursts run back to back, for the ratio. */
const embeds: { file: string; server: string; perSecond: number; pair: number }[] = [];
/** llama-bench's tg at depth run right after each one-stream sampled pair (llamaBenchTg), by pair. */
const tgPairs: { file: string; pair: number; tg: number }[] = [];
/** /health latencies per server, over every load. */
const health: Record<string, number[]> = { ours: [], "llama-server": [] };
const benches = new Map<string, Bench>();

for (const file of values.gguf?.split(",") ?? []) {
  const name = basename(file);
  const lb = await llamaBench(file);
  if (lb) {
    benches.set(name, lb);
    console.error(
      `${name} llama-bench: pp ${lb.pp.toFixed(0)} tok/s, tg ${lb.tg.toFixed(1)} tok/s, ` +
        `tg @ depth ${values["prompt-tokens"]} ${lb.tgDeep.toFixed(1)} tok/s`,
    );
  }
  PROMPT_WORDS = 0;
  const servers = await startBoth(file, "chat");
  try {
    await calibrate(servers[0]);
    // A warm-up no measured request shares a prefix with.
    for (const s of servers) await chat(s.url, words(nextId++, PROMPT_WORDS), 8, 0);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [workload, counts] of LOADS) {
        for (const n of counts) {
          for (let k = 0; k < (n === 1 ? ONE_STREAM_PAIRS : BURST_PAIRS); k++) {
            const pair = nextPair++;
            for (const s of (round + k) % 2 ? [...servers].reverse() : servers) {
              const churn = workload === "mixed" ? PARALLEL : 0;
              const { health: h, ...r } = await burst(s.url, n, ids, PROMPT_WORDS, NEW, workload, churn);
              health[s.name].push(...h);
              rows.push({ file: name, workload, streams: n, server: s.name, pair, ...r });
              console.error(
                `${name} round ${round + 1} ${s.name} ${workload} ${n} streams: decode ${
                  r.decode.toFixed(1)
                } ` +
                  `tok/s, aggregate ${r.aggregate.toFixed(1)} tok/s, TTFT p50 ${
                    r.ttftP50.toFixed(0)
                  } ms max ` +
                  `${r.ttftMax.toFixed(0)} ms`,
              );
            }
            if (values["llama-bench"] && workload === "sampled" && n === 1) {
              const tg = await llamaBenchTg(file);
              tgPairs.push({ file: name, pair, tg });
              console.error(
                `${name} round ${round + 1} llama-bench tg${NEW} @ depth: ${tg.toFixed(1)} tok/s`,
              );
            }
          }
        }
      }
    }
    for (const s of servers) {
      const p = await prefill(s);
      prefills.push({ file: name, server: s.name, ...p });
      console.error(`${name} ${s.name} prefill ${p.tokens} tokens: ${p.perSecond.toFixed(0)} tok/s`);
    }
    for (const s of servers) {
      const ms = await healthCpu(s.url, s.pid);
      if (!Number.isNaN(ms)) healthCosts.push({ file: name, server: s.name, ms });
      console.error(`${name} ${s.name} CPU per /health (20 ms apart, idle): ${ms.toFixed(3)} ms`);
    }
  } finally {
    for (const s of servers) await s.stop();
  }
}

const EMBED_N = Number(values["embed-requests"]);
// About 60 tokens an input: within the test embedding model's 128-token window.
const EMBED_WORDS = 20;
if (values["embed-gguf"]) {
  const file = values["embed-gguf"];
  const servers = await startBoth(file, "embedding");
  try {
    for (const s of servers) await embeddingBurst(s.url, EMBED_N, 1, ids, EMBED_WORDS);
    // Several pairs a round: one pair's two bursts last ~0.2 s each, and single pairs ranged 0.88-1.14 within
    // one run (three rounds, whichever server went second in a round slower in two of them).
    const pairs = Math.max(1, Number(values["embed-pairs"]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let p = 0; p < pairs; p++) {
        const pair = round * pairs + p;
        for (const s of pair % 2 ? [...servers].reverse() : servers) {
          const r = await embeddingBurst(s.url, EMBED_N, Number(values["embed-repeat"]), ids, EMBED_WORDS);
          health[s.name].push(...r.health);
          embeds.push({ file: basename(file), server: s.name, perSecond: r.perSecond, pair });
          console.error(
            `${basename(file)} round ${round + 1} pair ${p + 1} ${s.name}: ${
              r.perSecond.toFixed(1)
            } inputs/s`,
          );
        }
      }
    }
  } finally {
    for (const s of servers) await s.stop();
  }
}

/** The median over pairs of ours / llama-server's figure `k` (pairs with a figure on both sides). */
function pairedRatio(cell: readonly Row[], k: keyof Row): number {
  const ratios: number[] = [];
  for (const pair of new Set(cell.map((r) => r.pair))) {
    const side = (server: string) => cell.find((r) => r.pair === pair && r.server === server)?.[k] as number;
    const ratio = side("ours") / side("llama-server");
    if (Number.isFinite(ratio)) ratios.push(ratio);
  }
  return median(ratios);
}

const lines = [
  "| file | load | streams | figure | llama-server | this server | ratio |",
  "|---|---|---:|---|---:|---:|---:|",
];
const line = (
  file: string,
  load: string,
  n: number | string,
  label: string,
  peer: number,
  ours: number,
  d = 1,
  ratio = ours / peer,
) =>
  lines.push(
    `| ${file} | ${load} | ${n} | ${label} | ${peer.toFixed(d)} | ${ours.toFixed(d)} | ${ratio.toFixed(2)} |`,
  );
for (const file of [...new Set(rows.map((r) => r.file))]) {
  for (const [workload, counts] of LOADS) {
    for (const n of counts) {
      const cell = rows.filter((r) => r.file === file && r.workload === workload && r.streams === n);
      const of = (server: string, k: keyof Row) =>
        median(cell.filter((r) => r.server === server).map((r) => r[k] as number));
      const figures: [string, keyof Row][] = [
        ["per-stream decode tok/s", "decode"],
        ["aggregate tok/s", "aggregate"],
        ["TTFT p50 ms", "ttftP50"],
        ["TTFT max ms", "ttftMax"],
      ];
      for (const [label, k] of figures) {
        const peer = of("llama-server", k);
        const ours = of("ours", k);
        if (Number.isNaN(peer) || Number.isNaN(ours)) continue;
        line(file, workload, n, label, peer, ours, 1, pairedRatio(cell, k));
      }
    }
  }
  const lb = benches.get(file);
  if (lb) {
    const one = median(
      rows.filter((r) =>
        r.file === file && r.workload === "sampled" && r.streams === 1 && r.server === "ours"
      )
        .map((r) => r.decode),
    );
    line(file, "sampled", 1, `decode vs llama-bench tg${NEW} (no server)`, lb.tg, one);
    line(
      file,
      "sampled",
      1,
      `decode vs llama-bench tg${NEW} @ depth ${values["prompt-tokens"]} (no server)`,
      lb.tgDeep,
      one,
    );
    // The same, llama-bench run right after each pair: medians, and the median of the pairs' ratios.
    const paired = tgPairs.filter((t) => t.file === file);
    const pairs = paired.flatMap((t) => {
      const at = (server: string) =>
        rows.find((r) => r.file === file && r.pair === t.pair && r.server === server)?.decode;
      const ours = at("ours"), peer = at("llama-server");
      return ours !== undefined && peer !== undefined ? [{ tg: t.tg, ours, peer }] : [];
    });
    if (pairs.length) {
      const tg = median(pairs.map((x) => x.tg));
      line(
        file,
        "sampled",
        1,
        `decode vs llama-bench tg${NEW} @ depth ${values["prompt-tokens"]}, run after each pair`,
        tg,
        median(pairs.map((x) => x.ours)),
        1,
        median(pairs.map((x) => x.ours / x.tg)),
      );
      console.error(
        `${file} llama-server's one stream / llama-bench after each pair: ${
          median(pairs.map((x) => x.peer / x.tg)).toFixed(2)
        } (ours ${median(pairs.map((x) => x.ours / x.tg)).toFixed(2)})`,
      );
    }
    const ours = prefills.find((x) => x.file === file && x.server === "ours");
    if (ours) {
      line(file, "-", 1, `prefill vs llama-bench pp${values["prefill-tokens"]}`, lb.pp, ours.perSecond, 0);
    }
  }
  const p = (server: string) => prefills.find((x) => x.file === file && x.server === server);
  const peer = p("llama-server");
  const ours = p("ours");
  if (peer && ours) {
    line(file, "-", 1, `prefill tok/s (${ours.tokens}-token prompt)`, peer.perSecond, ours.perSecond, 0);
  }
  const h = (server: string) => healthCosts.find((x) => x.file === file && x.server === server)?.ms;
  const hPeer = h("llama-server"), hOurs = h("ours");
  if (hPeer !== undefined && hOurs !== undefined) {
    line(file, "-", "-", "server CPU ms per /health (every 20 ms, idle)", hPeer, hOurs, 3);
  }
}
for (const file of [...new Set(embeds.map((e) => e.file))]) {
  const of = (server: string) =>
    median(embeds.filter((e) => e.file === file && e.server === server).map((e) => e.perSecond));
  // As the chat loads': the median of the pairs' ratios (the VM drifts between rounds minutes apart).
  const ratios = [...new Set(embeds.map((e) => e.pair))].flatMap((pair) => {
    const at = (server: string) =>
      embeds.find((e) => e.file === file && e.server === server && e.pair === pair)?.perSecond;
    const ours = at("ours"), peer = at("llama-server");
    return ours !== undefined && peer ? [ours / peer] : [];
  });
  line(file, "embeddings", EMBED_N, "inputs/s", of("llama-server"), of("ours"), 1, median(ratios));
}
const p99 = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 99);
if (health.ours.length && health["llama-server"].length) {
  line("all", "all", "-", "/health p99 ms", p99(health["llama-server"]), p99(health.ours), 2);
}
console.log(lines.join("\n"));
if (values.json) {
  await Deno.writeTextFile(
    values.json,
    JSON.stringify({ rows, prefills, embeds, llamaBench: Object.fromEntries(benches) }, null, 2),
  );
}
