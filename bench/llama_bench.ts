// Benchmark of the llama.cpp backend on the SmolLM2-135M-shaped GGUF files (Q8_0, Q4_0; random weights), all
// in one run, CPU, 2 threads by default:
//  1. Decode tok/s and TTFT through the server (streamed over HTTP) against libllama's own decode loop on the
//     same file (lshim_bench: llama_decode in a C loop, greedy, no server; what llama-bench's tg measures),
//     interleaved request by request: the loop runs while the server is idle, before and after each request,
//     on a prompt as long as the request's, over the same positions (attention grows with them; llama.cpp pads
//     the cells it attends to 256 at a time). The server's time per token runs from the first streamed token to
//     the last (the first comes from the prompt: prefill doesn't count); the ratio is the median over 2 x
//     `--rounds` pairs.
//  2. Concurrency: 1, 4 and 8 streams arriving together (distinct prompts, so no prefix cache): aggregate
//     tok/s, TTFT p50/max, per-stream decode tok/s, each the median over `--bursts` bursts (each against the
//     idle TTFT measured right before it). Goals at 8: TTFT max <= 8 idle prefills + 10%, aggregate >= the
//     1-stream figure. (Until session 15 also p50 <= 5x idle: prompts were read one after another. A burst's
//     prompts are now read together, as llama-server reads them, so p50 is about max: bench/peer_bench.ts
//     compares both with llama-server's.)
//  3. The second turn of a conversation with a ~1000-token history: TTFT with the cached prefix vs the same
//     prompt cold. Goal: <= 15%.
//
//   deno run -A bench/llama_bench.ts [--threads 2] [--rounds 5] [--new-tokens 64] [--parallel 8] [--bursts 3]
import { parseArgs } from "node:util";
import { join } from "node:path";
import type { LlamaContext } from "../src/engines/llama/ffi.ts";
import { median } from "./stats.ts";
import { streamChat } from "./sse_client.ts";
import { greedyStream, libllamaLoop, ROOT, startBenchServer } from "./bench_server.ts";

const DIR = "models/generated/bench/smollm2-135m-instruct/gguf";
const { values } = parseArgs({
  args: Deno.args,
  options: {
    threads: { type: "string", default: "2" },
    rounds: { type: "string", default: "5" },
    "new-tokens": { type: "string", default: "64" },
    parallel: { type: "string", default: "8" },
    bursts: { type: "string", default: "3" },
  },
});
const threads = Number(values.threads);
const rounds = Number(values.rounds);
const N = Number(values["new-tokens"]);
const bursts = Number(values.bursts);
const TYPES = ["Q8_0", "Q4_0"] as const;

const WORDS =
  ("the people of the river town build small boats from old wood and paint them blue before the " +
    "summer market where farmers sell fresh bread cheese apples honey and warm soup to travelers").split(" ");
let nonce = 0;
/** A ~`words`-word text that starts differently every call (no shared prefix with earlier prompts). */
function text(words: number): string {
  const n = ++nonce;
  return `Note ${n}: ` + Array.from({ length: words }, (_, i) => WORDS[(i * 7 + n) % WORDS.length]).join(" ");
}
const ask = greedyStream;

// 1a. libllama's own loop in this process, one context per file, made before the server starts.
const direct: Record<string, { ctx: LlamaContext }> = {};
for (const t of TYPES) direct[t] = { ctx: libllamaLoop(join(ROOT, DIR, `smollm2-135m-${t}.gguf`), threads) };

const { url, close } = await startBenchServer(
  Object.fromEntries(
    TYPES.map((t) => [t, { task: "chat", path: join(DIR, `smollm2-135m-${t}.gguf`), device: "cpu" }]),
  ),
  [`--threads=${threads}`, `--parallel=${values.parallel}`],
);

const out: string[] = [];
const f1 = (x: number) => x.toFixed(1);
out.push(
  `SmolLM2-135M shape (random weights), GGUF, ${threads} threads, ${N} new tokens; ` +
    `server --parallel=${values.parallel}.`,
  "",
  "| quant | prompt tokens (median) | libllama decode tok/s | server decode tok/s | server / libllama | " +
    "libllama prompt ms | server TTFT ms |",
  "|---|---|---|---|---|---|---|",
);
const conc: string[] = [
  "| quant | streams | aggregate tok/s | idle TTFT ms | TTFT p50 ms | TTFT max ms | per-stream decode tok/s |",
  "|---|---|---|---|---|---|---|",
];
const cache: string[] = [
  "| quant | history tokens | TTFT cold ms | TTFT cached ms | cached / cold | cached_tokens |",
  "|---|---|---|---|---|---|",
];
const goals: string[] = [];

for (const t of TYPES) {
  const user = (words = 100) => [{ role: "user", content: text(words) }];
  await streamChat(url, ask(t, user(), 8)); // load + warm up
  // 1b. Server decode against libllama's loop, in pairs: each streamed request sits between two runs of the
  // loop over the same positions (the request's prompt length, its N - 1 decode steps: the first token comes
  // from the prompt), and the pair's ratio is the server's time per token against the mean of the two loops'.
  // The row gives the median ratio: a pair shares the machine's state of the moment (this machine class drifts
  // by 10% or more within a run), so drift cancels within pairs instead of between medians of separate series.
  const serverTg: number[] = [];
  const libTg: number[] = [];
  const ratios: number[] = [];
  const ttft: number[] = [];
  const prompts: number[] = [];
  const libPrompt: number[] = [];
  let promptTokens = (await streamChat(url, ask(t, user(), 8))).promptTokens;
  for (let r = 0; r < 2 * rounds; r++) {
    const before = direct[t].ctx.benchDecode(promptTokens, N - 1);
    const a = await streamChat(url, ask(t, user(), N));
    promptTokens = a.promptTokens;
    const after = direct[t].ctx.benchDecode(promptTokens, N - 1);
    const server = ((N - 1) / (a.total - a.ttft)) * 1000;
    const lib = ((N - 1) / ((before.genMs + after.genMs) / 2)) * 1000;
    serverTg.push(server), libTg.push(lib), ratios.push(server / lib);
    ttft.push(a.ttft), prompts.push(a.promptTokens), libPrompt.push(before.promptMs, after.promptMs);
  }
  const ratio = median(ratios);
  const idleTtft = median(ttft);
  out.push(
    `| ${t} | ${median(prompts)} | ${f1(median(libTg))} | ${f1(median(serverTg))} | ${
      (ratio * 100).toFixed(1)
    }% | ` +
      `${f1(median(libPrompt))} | ${f1(idleTtft)} |`,
  );
  // 2. Streams arriving together.
  let oneStream = 0;
  for (const streams of [1, 4, 8]) {
    // Each burst is one sample of a noisy machine: the row gives the median of `bursts` of them.
    const idles: number[] = [];
    const p50s: number[] = [];
    const maxes: number[] = [];
    const aggregates: number[] = [];
    const perStreams: number[] = [];
    for (let k = 0; k < bursts; k++) {
      // The idle reference: requests alone just before, in the same state of the prompt cache (its cached
      // cells take part in every attention, so a TTFT measured earlier, with fewer of them, would flatter
      // nothing).
      const alone: number[] = [];
      for (let r = 0; r < 3; r++) alone.push((await streamChat(url, ask(t, user(), 8))).ttft);
      idles.push(median(alone));
      const t0 = performance.now();
      const runs = await Promise.all(
        Array.from({ length: streams }, () => streamChat(url, ask(t, user(), N))),
      );
      const wall = performance.now() - t0;
      aggregates.push((runs.reduce((n, r) => n + r.tokens, 0) / wall) * 1000);
      const firsts = runs.map((r) => r.ttft).sort((a, b) => a - b);
      p50s.push(median(firsts));
      maxes.push(firsts.at(-1)!);
      perStreams.push(median(runs.map((r) => ((r.tokens - 1) / (r.total - r.ttft)) * 1000)));
    }
    const idle = median(idles);
    const aggregate = median(aggregates);
    if (streams === 1) oneStream = aggregate;
    conc.push(
      `| ${t} | ${streams} | ${f1(aggregate)} | ${f1(idle)} | ${f1(median(p50s))} | ` +
        `${f1(median(maxes))} | ${f1(median(perStreams))} |`,
    );
    if (streams === 8) {
      // Each burst against its own idle reference, then the median over bursts.
      const maxRatio = median(maxes.map((m, k) => m / (8 * idles[k] * 1.1)));
      const p50Ratio = median(p50s.map((m, k) => m / idles[k]));
      goals.push(
        `${t} at 8 streams (median of ${bursts} bursts): TTFT max ${f1(median(maxes))} ms, ` +
          `${maxRatio.toFixed(3)}x the bound of 8 idle prefills + 10% (goal <= 1); TTFT p50 ` +
          `${p50Ratio.toFixed(1)}x idle; aggregate ${(aggregate / oneStream).toFixed(2)}x the ` +
          `1-stream figure (goal >= 1).`,
      );
    }
  }
  // 3. Second turn over a ~1000-token history, against the same prompt cold (a fresh first word).
  const history = (first: string) => {
    const msgs: { role: string; content: string }[] = [{
      role: "system",
      content: `${first} You are helpful.`,
    }];
    for (let i = 0; i < 8; i++) {
      msgs.push({ role: "user", content: text(50) }, { role: "assistant", content: text(50) });
    }
    return msgs;
  };
  const cold: number[] = [];
  const warm: number[] = [];
  let cachedTokens = 0;
  let historyTokens = 0;
  for (let r = 0; r < rounds; r++) {
    const h = history(`Session ${++nonce}.`);
    const first = await streamChat(url, ask(t, [...h, { role: "user", content: "Go on." }], 16));
    const turn2 = [...h, { role: "user", content: "Go on." }, { role: "assistant", content: first.text }, {
      role: "user",
      content: "And then?",
    }];
    const second = await streamChat(url, ask(t, turn2, 8));
    warm.push(second.ttft);
    cachedTokens = second.cachedTokens;
    historyTokens = second.promptTokens;
    const fresh = [{ role: "system", content: `Session ${++nonce}x. You are helpful.` }, ...turn2.slice(1)];
    cold.push((await streamChat(url, ask(t, fresh, 8))).ttft);
  }
  const cachedRatio = median(warm) / median(cold);
  cache.push(
    `| ${t} | ${historyTokens} | ${f1(median(cold))} | ${f1(median(warm))} | ${
      (cachedRatio * 100).toFixed(1)
    }% | ` +
      `${cachedTokens} |`,
  );
  goals.push(
    `${t}: server decode ${(ratio * 100).toFixed(1)}% of libllama (median of ${
      2 * rounds
    } pairs; goal >= 95%); ` +
      `second-turn TTFT ${(cachedRatio * 100).toFixed(1)}% of cold (goal <= 15%).`,
  );
}

console.log([...out, "", ...conc, "", ...cache, "", ...goals.map((g) => `- ${g}`)].join("\n"));
for (const { ctx } of Object.values(direct)) ctx.free(), ctx.model.free();
await close();
Deno.exit(0);
