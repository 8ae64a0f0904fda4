// Owns the side-by-side benchmark against the peer users would otherwise run: llama.cpp's own `llama-server`
// on the same GGUF file, the same machine and the same load, in one run. For each file: N streaming chats
// arriving together (N from --streams), each with a prompt of ~--prompt-tokens tokens that shares no prefix
// with any other request (a request-unique opening), temperature 1 with a per-request seed, exactly
// --new-tokens new tokens (ignore_eos), servers alternating per round; and one long prompt alone for prefill
// speed. Reports per-stream decode tok/s, aggregate tok/s, TTFT p50/max and prefill tok/s, each as the ratio
// to llama-server's. Every stream is checked to have produced its tokens.
// Usage: deno run -A bench/peer_bench.ts --llama-server BIN --gguf FILE[,FILE] [--streams 1,8,32]
//   [--rounds 2] [--new-tokens 64] [--prompt-tokens 250] [--threads N] [--gpu-layers N] [--llama-lib DIR]
//   [--ctx 2048] [--json OUT.json] [--llama-bench BIN]
// With --llama-bench, libllama's own loop on the same file is the baseline of one stream too: llama-bench's
// tg (--new-tokens) against this server's one-stream decode, and its pp (--prefill-tokens) against the prefill.
import { parseArgs } from "node:util";
import { basename, dirname, join } from "node:path";
import { percentile } from "./stats.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    "llama-server": { type: "string" },
    "llama-bench": { type: "string" },
    gguf: { type: "string" },
    streams: { type: "string", default: "1,8" },
    rounds: { type: "string", default: "2" },
    "new-tokens": { type: "string", default: "64" },
    "prompt-tokens": { type: "string", default: "250" },
    "prefill-tokens": { type: "string", default: "512" },
    threads: { type: "string", default: String(navigator.hardwareConcurrency) },
    "gpu-layers": { type: "string", default: "-1" },
    "llama-lib": { type: "string" },
    ctx: { type: "string", default: "2048" },
    json: { type: "string" },
  },
});
if (!values["llama-server"] || !values.gguf) {
  console.error("usage: --llama-server BIN --gguf FILE[,FILE] (see the header of bench/peer_bench.ts)");
  Deno.exit(2);
}
const ROOT = new URL("../", import.meta.url).pathname;
const STREAMS = values.streams!.split(",").map(Number);
const ROUNDS = Number(values.rounds);
const NEW = Number(values["new-tokens"]);
// Words per prompt, sized once per file from what the model's tokenizer makes of them (see calibrate()).
let PROMPT_WORDS = 0;
let PREFILL_WORDS = 0;
const THREADS = values.threads!;
const CTX = Number(values.ctx);
const PARALLEL = Math.max(...STREAMS);
const GPU = Number(values["gpu-layers"]) !== 0;

interface Server {
  name: "ours" | "llama-server";
  url: string;
  stop(): Promise<void>;
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function waitHealthy(url: string, child: Deno.ChildProcess, what: string): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(`${url}/health`);
      await r.body?.cancel();
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    const exited = await Promise.race([
      child.status.then(() => true),
      new Promise((r) => setTimeout(r, 250)),
    ]);
    if (exited === true) throw new Error(`${what} exited before it was ready`);
  }
  throw new Error(`${what} not ready after 300 s`);
}

async function startLlamaServer(file: string): Promise<Server> {
  const port = freePort();
  const args = [
    "-m",
    file,
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "-np",
    String(PARALLEL),
    "-c",
    String(CTX * PARALLEL),
    "-t",
    String(THREADS),
    "-ngl",
    GPU ? "999" : "0",
    "--no-webui",
  ];
  const child = new Deno.Command(values["llama-server"]!, { args, stdout: "null", stderr: "null" }).spawn();
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, child, "llama-server");
  return {
    name: "llama-server",
    url,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

async function startOurs(file: string): Promise<Server> {
  const port = freePort();
  const tmp = await Deno.makeTempDir({ prefix: "peer-bench-" });
  const manifest = join(tmp, "manifest.json");
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({
      models: { bench: { task: "chat", path: basename(file), options: { context_length: CTX } } },
    }),
  );
  const args = [
    "run",
    "-A",
    join(ROOT, "main.ts"),
    `--port=${port}`,
    "--host=127.0.0.1",
    `--models-dir=${dirname(file)}`,
    `--manifest=${manifest}`,
    "--offline",
    `--parallel=${PARALLEL}`,
    `--threads=${THREADS}`,
    `--gpu-layers=${values["gpu-layers"]}`,
    "--queue-size=256",
    `--data-dir=${tmp}`,
    "--store-url=none",
    ...(values["llama-lib"] ? [`--llama-lib=${values["llama-lib"]}`] : []),
  ];
  const child = new Deno.Command(Deno.execPath(), { args, cwd: ROOT, stdout: "null", stderr: "piped" })
    .spawn();
  // Keep its log drained (and the last of it for errors).
  let tail = "";
  (async () => {
    for await (const c of child.stderr.pipeThrough(new TextDecoderStream())) tail = (tail + c).slice(-4000);
  })();
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHealthy(url, child, "this server");
    // Load the model before timing anything (llama-server loads at start).
    await chat(url, "warm up " + words(9999, 20), 4, 1);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${tail}`);
  }
  return {
    name: "ours",
    url,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    },
  };
}

const VOCAB =
  "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa " +
  "quebec romeo sierra tango uniform victor whiskey xray yankee zulu river stone cloud maple";
/** A request-unique text: the id spelled first, so no two prompts share more than the template's prefix. */
function words(id: number, n: number): string {
  const w = VOCAB.split(" ");
  const out = [`request ${id} ${(id * 7919) % 10007}:`];
  let x = id * 2654435761 >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >>> 17, x ^= x << 5;
    out.push(w[(x >>> 0) % w.length]);
  }
  return out.join(" ");
}

interface Stream {
  ttft: number;
  /** ms from the first to the last content chunk. */
  span: number;
  tokens: number;
  promptTokens: number;
}

async function chat(url: string, text: string, maxTokens: number, seed: number): Promise<Stream> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "bench",
      messages: [{ role: "user", content: text }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: maxTokens,
      temperature: 1,
      seed,
      ignore_eos: true,
    }),
  });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let buf = "";
  let first = 0;
  let last = 0;
  let chunks = 0;
  let tokens = 0;
  let promptTokens = 0;
  for await (const bytes of res.body!) {
    buf += decoder.decode(bytes, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 2);
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      const ev = JSON.parse(line.slice(6));
      const delta = ev.choices?.[0]?.delta;
      if (delta?.content || delta?.reasoning_content) {
        const now = performance.now();
        first ||= now;
        last = now;
        chunks++;
      }
      if (ev.usage) {
        tokens = ev.usage.completion_tokens;
        promptTokens = ev.usage.prompt_tokens;
      }
    }
  }
  tokens ||= chunks;
  if (tokens !== maxTokens) throw new Error(`${url}: a stream produced ${tokens} tokens, not ${maxTokens}`);
  return { ttft: first - t0, span: last - first, tokens, promptTokens };
}

interface Row {
  file: string;
  streams: number;
  server: string;
  decode: number;
  aggregate: number;
  ttftP50: number;
  ttftMax: number;
}

let nextId = 1;

/** Sizes the prompts for this file's tokenizer: tokens per word measured on the first server started. */
async function calibrate(s: Server): Promise<void> {
  const small = await chat(s.url, words(nextId++, 0), 1, 0);
  const big = await chat(s.url, words(nextId++, 200), 1, 0);
  const perWord = (big.promptTokens - small.promptTokens) / 200;
  const overhead = small.promptTokens;
  PROMPT_WORDS = Math.max(1, Math.round((Number(values["prompt-tokens"]) - overhead) / perWord));
  PREFILL_WORDS = Math.max(1, Math.round((Number(values["prefill-tokens"]) - overhead) / perWord));
}
async function load(s: Server, file: string, n: number): Promise<Row> {
  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: n }, () => {
      const id = nextId++;
      return chat(s.url, words(id, PROMPT_WORDS), NEW, id);
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const ttfts = results.map((r) => r.ttft).sort((a, b) => a - b);
  const decode = results.map((r) => (r.tokens - 1) / (r.span / 1000));
  return {
    file,
    streams: n,
    server: s.name,
    decode: decode.reduce((a, b) => a + b, 0) / decode.length,
    aggregate: results.reduce((a, r) => a + r.tokens, 0) / wall,
    ttftP50: percentile(ttfts, 50),
    ttftMax: ttfts.at(-1)!,
  };
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

/** llama-bench's pp and tg tok/s on the file (same threads and GPU layers as the servers). */
async function llamaBench(file: string): Promise<{ pp: number; tg: number } | undefined> {
  if (!values["llama-bench"]) return undefined;
  const args = [
    "-m",
    file,
    "-p",
    values["prefill-tokens"]!,
    "-n",
    values["new-tokens"]!,
    "-t",
    THREADS,
    "-ngl",
    GPU ? "999" : "0",
    "-r",
    "3",
    "-o",
    "json",
  ];
  const out = await new Deno.Command(values["llama-bench"]!, { args, stdout: "piped", stderr: "null" })
    .output();
  if (!out.success) throw new Error(`llama-bench failed on ${file}`);
  const runs = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    n_prompt: number;
    n_gen: number;
    avg_ts: number;
  }[];
  return {
    pp: runs.find((r) => r.n_prompt > 0 && r.n_gen === 0)?.avg_ts ?? NaN,
    tg: runs.find((r) => r.n_gen > 0 && r.n_prompt === 0)?.avg_ts ?? NaN,
  };
}

const benches = new Map<string, { pp: number; tg: number }>();
let calibratedFor = "";
const rows: Row[] = [];
const prefills: { file: string; server: string; tokens: number; perSecond: number }[] = [];
for (const file of values.gguf!.split(",")) {
  const name = basename(file);
  const lb = await llamaBench(file);
  if (lb) {
    benches.set(name, lb);
    console.error(`${name} llama-bench: pp ${lb.pp.toFixed(0)} tok/s, tg ${lb.tg.toFixed(1)} tok/s`);
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which server goes first, so neither always runs on a warmer machine.
    const order = round % 2 ? [startLlamaServer, startOurs] : [startOurs, startLlamaServer];
    for (const start of order) {
      const s = await start(file);
      try {
        if (!PROMPT_WORDS || calibratedFor !== name) {
          await calibrate(s);
          calibratedFor = name;
        }
        // A warm-up no measured request shares a prefix with.
        await chat(s.url, words(nextId++, PROMPT_WORDS), 8, 0);
        for (const n of STREAMS) {
          const r = await load(s, name, n);
          rows.push(r);
          console.error(
            `${name} round ${round + 1} ${s.name} ${n} streams: decode ${
              r.decode.toFixed(1)
            } tok/s, aggregate ` +
              `${r.aggregate.toFixed(1)} tok/s, TTFT p50 ${r.ttftP50.toFixed(0)} ms max ${
                r.ttftMax.toFixed(0)
              } ms`,
          );
        }
        if (round === 0) {
          const p = await prefill(s);
          prefills.push({ file: name, server: s.name, ...p });
          console.error(`${name} ${s.name} prefill ${p.tokens} tokens: ${p.perSecond.toFixed(0)} tok/s`);
        }
      } finally {
        await s.stop();
      }
    }
  }
}

const med = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const lines = [
  "| file | streams | figure | llama-server | this server | ratio |",
  "|---|---:|---|---:|---:|---:|",
];
for (const file of [...new Set(rows.map((r) => r.file))]) {
  for (const n of STREAMS) {
    const of = (server: string, k: keyof Row) =>
      med(
        rows.filter((r) => r.file === file && r.streams === n && r.server === server).map((r) =>
          r[k] as number
        ),
      );
    const figures: [string, keyof Row, number][] = [
      ["per-stream decode tok/s", "decode", 1],
      ["aggregate tok/s", "aggregate", 1],
      ["TTFT p50 ms", "ttftP50", 1],
      ["TTFT max ms", "ttftMax", 1],
    ];
    for (const [label, k] of figures) {
      const peer = of("llama-server", k);
      const ours = of("ours", k);
      lines.push(
        `| ${file} | ${n} | ${label} | ${peer.toFixed(1)} | ${ours.toFixed(1)} | ${
          (ours / peer).toFixed(2)
        } |`,
      );
    }
  }
  const lb = benches.get(file);
  if (lb) {
    const one = med(
      rows.filter((r) => r.file === file && r.streams === 1 && r.server === "ours").map((r) => r.decode),
    );
    const oneText = Number.isFinite(one) ? one.toFixed(1) : "-";
    lines.push(
      `| ${file} | 1 | decode vs llama-bench tg${NEW} (no server) | ${lb.tg.toFixed(1)} | ${oneText} | ` +
        `${(one / lb.tg).toFixed(2)} |`,
    );
    const ours = prefills.find((x) => x.file === file && x.server === "ours");
    if (ours) {
      lines.push(
        `| ${file} | 1 | prefill vs llama-bench pp${values["prefill-tokens"]} (no server) | ${
          lb.pp.toFixed(0)
        } | ` +
          `${ours.perSecond.toFixed(0)} | ${(ours.perSecond / lb.pp).toFixed(2)} |`,
      );
    }
  }
  const p = (server: string) => prefills.find((x) => x.file === file && x.server === server);
  const peer = p("llama-server");
  const ours = p("ours");
  if (peer && ours) {
    lines.push(
      `| ${file} | 1 | prefill tok/s (${ours.tokens}-token prompt) | ${peer.perSecond.toFixed(0)} | ` +
        `${ours.perSecond.toFixed(0)} | ${(ours.perSecond / peer.perSecond).toFixed(2)} |`,
    );
  }
}
console.log(lines.join("\n"));
if (values.json) {
  await Deno.writeTextFile(
    values.json,
    JSON.stringify({ rows, prefills, llamaBench: Object.fromEntries(benches) }, null, 2),
  );
}
