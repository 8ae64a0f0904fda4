// Benchmark of the ONNX chat path on the SmolLM2-135M shape (random weights), all in one run, through the
// server (streamed over HTTP, greedy, ignore_eos): decode tokens/s and TTFT for q8 and q4 in
//   - "before": today's layout (decomposed attention, as optimum exports it) run as this server did before
//     issue 16: transformers.js's forward per token and onnxruntime's threads never spinning
//     (`onnx_direct_run: false`, `ort_spinning: "never"` in the manifest);
//   - "decomposed": the same files with spinning within runs (the default) and direct session runs (opt-in);
//   - "fused": the fused layout of onnxruntime-genai's model builder in its CPU form (GroupQueryAttention over
//     packed QKV with the rotary inside, SkipSimplifiedLayerNormalization, MatMulNBits with gate/up packed),
//     first through onnxruntime-node's JS API (`onnx_native: false`: the cache concatenated by onnxruntime and
//     copied out every token), then as the server runs it by default: onnxruntime's C API with the cache in
//     place (src/engines/transformers/native_decoder.ts);
// and llama.cpp on the Q8_0 / Q4_0 GGUF of the same weights twice: libllama's own decode loop in this process
// (no server at all) and this server's llama.cpp backend (the same HTTP path the ONNX rows take); each ONNX
// row is compared with both. Then each variant's own prefill/step loop on this thread without the server
// (what the HTTP side costs), and embeddings inputs/s on the MiniLM-L6 shape: before (threads never spin),
// after (spinning within runs), and the fused encoder layout (onnx/model_O2.onnx). Between them, the other
// layouts real repos ship (fp16, q4f16, external data, a merged decoder) at the same shape, each loaded and
// decoded through the server.
// Decode tokens/s: the extra tokens over the extra time between two lengths (64 and 16), so prefill and every
// fixed cost cancel; TTFT: a ~128-token prompt that no earlier request shares (a cold prefill).
//
//   deno run -A bench/onnx_bench.ts [--rounds 5] [--threads 2]
import { parseArgs } from "node:util";
import { join } from "node:path";
import type { LlamaContext } from "../src/engines/llama/ffi.ts";
import { greedyStream, libllamaLoop, startBenchServer } from "./bench_server.ts";
import { median } from "./stats.ts";
import { loadChatBackend } from "../src/engines/transformers/chat_backend.ts";
import { createLogger } from "../src/log.ts";
import { argmax } from "../src/chat/sampler.ts";
import { streamChat } from "./sse_client.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "5" }, threads: { type: "string", default: "2" } },
});
const rounds = Number(values.rounds);
const threads = Number(values.threads);
const BENCH = "models/generated/bench";
const DECOMPOSED = `${BENCH}/smollm2-135m-instruct`;
const FUSED = `${BENCH}/smollm2-135m-gqa`;
const MINILM = `${BENCH}/all-minilm-l6-v2`;
const LAYOUTS = `${BENCH}/smollm2-135m-layouts`;
const LONG = 64;
const SHORT = 16;
const BEFORE = { onnx_direct_run: false, ort_spinning: "never" };

const BITS = [{ dtype: "q8", gguf: "Q8_0" }, { dtype: "q4", gguf: "Q4_0" }] as const;
const VARIANTS = [
  { id: "before", name: "before", path: DECOMPOSED, options: BEFORE },
  { id: "decomposed", name: "decomposed", path: DECOMPOSED, options: { onnx_direct_run: true } },
  {
    id: "fused-node",
    name: "fused, onnxruntime-node",
    path: FUSED,
    options: { onnx_direct_run: true, onnx_native: false },
  },
  { id: "fused-native", name: "fused, C API, cache in place", path: FUSED, options: {} },
] as const;

const models: Record<string, unknown> = {};
for (const { dtype } of BITS) {
  for (const v of VARIANTS) {
    models[`${v.id}-${dtype}`] = { task: "chat", path: v.path, dtype, device: "cpu", options: v.options };
  }
}
/** The other layouts real repos ship, at the real size: each must load and decode through the server. */
const OTHER_LAYOUTS = [
  { id: "layout-fp16", name: "fp16 weights, fp16 KV cache (decomposed)", path: LAYOUTS, dtype: "fp16" },
  { id: "layout-fp16-fused", name: "fp16, fused (packed), C API", path: FUSED, dtype: "fp16" },
  { id: "layout-q4f16-fused", name: "q4f16, fused (packed), C API", path: FUSED, dtype: "q4f16" },
  { id: "layout-q4-external", name: "q4, weights in model_q4.onnx_data", path: LAYOUTS, dtype: "q4" },
  { id: "layout-q8-merged", name: "q8, decoder_model_merged (use_cache_branch)", path: LAYOUTS, dtype: "q8" },
] as const;
for (const l of OTHER_LAYOUTS) models[l.id] = { task: "chat", path: l.path, dtype: l.dtype, device: "cpu" };
for (const { gguf } of BITS) {
  models[`llama-${gguf}`] = {
    task: "chat",
    path: join(DECOMPOSED, "gguf", `smollm2-135m-${gguf}.gguf`),
    device: "cpu",
  };
}
models["embed-before"] = { task: "embedding", path: MINILM, dtype: "fp32", device: "cpu", options: BEFORE };
models["embed-after"] = { task: "embedding", path: MINILM, dtype: "fp32", device: "cpu", options: {} };
models["embed-fused"] = {
  task: "embedding",
  path: MINILM,
  dtype: "fp32",
  device: "cpu",
  options: { model_file_name: "model_O2" },
};

const WORDS = (
  "the people of the river town build small boats from old wood and paint them blue before the summer " +
  "market where farmers sell fresh bread cheese apples honey and warm soup to travelers who arrive early"
).split(" ");
let nonce = 0;
/** A ~128-token prompt no other request shares (a fresh first word), so each prefill is cold. */
const prompt = () => {
  const k = ++nonce;
  return [{
    role: "user",
    content: `Note ${k}: ` +
      Array.from({ length: 100 }, (_, i) => WORDS[(i * 7 + k) % WORDS.length]).join(" "),
  }];
};
const ask = (model: string, maxTokens: number) => greedyStream(model, prompt(), maxTokens);

// libllama's own loop, one context per file, made before the server starts.
const lib: Record<string, LlamaContext> = {};
for (const { gguf } of BITS) {
  lib[gguf] = libllamaLoop(join(DECOMPOSED, "gguf", `smollm2-135m-${gguf}.gguf`), threads);
}

/** Decode tok/s of the ONNX backend's own step loop (greedy argmax) after a prompt of `promptTokens`. */
async function stepLoop(path: string, dtype: string, options: Record<string, unknown>, promptTokens: number) {
  const e = await loadChatBackend({
    id: "loop",
    task: "chat",
    engine: "transformers",
    path,
    dtype,
    device: "cpu",
    options,
    created: 0,
    ownedBy: "bench",
  }, { modelsDir: path, threads, allowRemote: false, log: createLogger("json", () => {}) });
  const ids = e.encode(prompt()[0].content.repeat(3), false).slice(0, promptTokens);
  const decode = async (n: number) => {
    const seq = e.open();
    let tok = argmax((await e.prefill(seq, ids)).logits);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) tok = argmax(await e.step(seq, tok));
    const ms = performance.now() - t0;
    e.close(seq);
    e.clearCache();
    return ms;
  };
  await decode(4);
  const long: number[] = [];
  const short: number[] = [];
  for (let r = 0; r < rounds; r++) long.push(await decode(LONG)), short.push(await decode(SHORT));
  await e.dispose();
  return ((LONG - SHORT) / (median(long) - median(short))) * 1000;
}

const { url, close } = await startBenchServer(models, [`--threads=${threads}`, "--parallel=1"]);
const f1 = (x: number) => x.toFixed(1);
const out: string[] = [
  `SmolLM2-135M shape (random weights), ${threads} threads, CPU, through the server (streamed, greedy), ` +
  `decode = (${LONG} - ${SHORT}) extra tokens over the extra time, ${rounds} rounds, medians.`,
  "",
  "| bits | layout | TTFT ms | decode tok/s | vs before | vs llama.cpp loop | vs llama.cpp server |",
  "|---|---|---:|---:|---:|---:|---:|",
];
const goals: string[] = [];
try {
  for (const { dtype, gguf } of BITS) {
    const names = [...VARIANTS.map((v) => `${v.id}-${dtype}`), `llama-${gguf}`];
    for (const name of names) await streamChat(url, ask(name, 8)); // load + warm up
    const long: Record<string, number[]> = {};
    const short: Record<string, number[]> = {};
    const ttft: Record<string, number[]> = {};
    const libLong: number[] = [];
    const libShort: number[] = [];
    const libPrompt: number[] = [];
    let promptTokens = 0;
    // Interleaved, so drift on a shared machine reaches every variant alike.
    for (let r = 0; r < rounds; r++) {
      for (const name of names) {
        const a = await streamChat(url, ask(name, LONG));
        const b = await streamChat(url, ask(name, SHORT));
        (long[name] ??= []).push(a.total);
        (short[name] ??= []).push(b.total);
        (ttft[name] ??= []).push(a.ttft, b.ttft);
        promptTokens = a.promptTokens;
      }
      const la = lib[gguf].benchDecode(promptTokens, LONG);
      const lb = lib[gguf].benchDecode(promptTokens, SHORT);
      libLong.push(la.genMs), libShort.push(lb.genMs), libPrompt.push(la.promptMs, lb.promptMs);
    }
    const tps = (l: number[], s: number[]) => ((LONG - SHORT) / (median(l) - median(s))) * 1000;
    const llama = tps(libLong, libShort);
    const llamaName = `llama-${gguf}`;
    const served = tps(long[llamaName], short[llamaName]);
    const before = tps(long[names[0]], short[names[0]]);
    const pct = (t: number, of: number) => `${(t / of * 100).toFixed(0)}%`;
    let best = 0;
    for (const [i, v] of VARIANTS.entries()) {
      const t = tps(long[names[i]], short[names[i]]);
      best = Math.max(best, t);
      out.push(
        `| ${dtype} | ${v.name} | ${f1(median(ttft[names[i]]))} | ${f1(t)} | ` +
          `${(t / before).toFixed(2)}x | ${pct(t, llama)} | ${pct(t, served)} |`,
      );
    }
    out.push(
      `| ${gguf} | llama.cpp, this server | ${f1(median(ttft[llamaName]))} | ${f1(served)} | | ` +
        `${pct(served, llama)} | 100% |`,
      `| ${gguf} | llama.cpp, libllama loop (no server) | ${f1(median(libPrompt))} | ${
        f1(llama)
      } | | 100% | |`,
    );
    // The backend's own prefill/step loop on this thread, greedy, no server: what the HTTP side costs.
    for (const v of VARIANTS) {
      const t = await stepLoop(v.path, dtype, v.options, promptTokens);
      out.push(
        `| ${dtype} | ${v.name}, backend loop in-process | | ${f1(t)} | | ${pct(t, llama)} | |`,
      );
    }
    goals.push(
      `${dtype}: best ONNX layout ${(best / before).toFixed(2)}x before (goal >= 1.5x), ` +
        `${(best / llama * 100).toFixed(0)}% of libllama's loop and ${
          (best / served * 100).toFixed(0)
        }% of ` +
        `llama.cpp through this server on ${gguf} (goal >= 60%); prompt ${promptTokens} tokens.`,
    );
  }

  // The other layouts, at the real size: loaded and decoded through the server (each as it runs by default).
  out.push(
    "",
    "Other layouts at the same shape, through the server (as each runs by default), " +
      `${Math.max(2, Math.ceil(rounds / 2))} rounds:`,
    "",
    "| layout | TTFT ms | decode tok/s |",
    "|---|---:|---:|",
  );
  for (const l of OTHER_LAYOUTS) {
    await streamChat(url, ask(l.id, 8)); // load + warm up
    const a: number[] = [];
    const b: number[] = [];
    const t: number[] = [];
    for (let r = 0; r < Math.max(2, Math.ceil(rounds / 2)); r++) {
      const x = await streamChat(url, ask(l.id, LONG));
      const y = await streamChat(url, ask(l.id, SHORT));
      if (x.tokens !== LONG || y.tokens !== SHORT) throw new Error(`${l.id}: wrong token counts`);
      a.push(x.total), b.push(y.total), t.push(x.ttft, y.ttft);
    }
    const tps = ((LONG - SHORT) / (median(a) - median(b))) * 1000;
    out.push(`| ${l.name} | ${f1(median(t))} | ${f1(tps)} |`);
  }

  // Embeddings: 32 inputs of ~12 words per request, inputs/s.
  const inputs = (k: number) =>
    Array.from({ length: 32 }, (_, i) => `${k}.${i} ` + WORDS.slice(i % 20, (i % 20) + 12).join(" "));
  const embed = async (model: string, k: number) => {
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, input: inputs(k) }),
    });
    if (!res.ok) throw new Error(`embeddings: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    return performance.now() - t0;
  };
  const emb: Record<string, number[]> = { "embed-before": [], "embed-after": [], "embed-fused": [] };
  for (const m of Object.keys(emb)) await embed(m, 0);
  for (let r = 0; r < rounds * 2; r++) for (const m of Object.keys(emb)) emb[m].push(await embed(m, r + 1));
  const ips = (m: string) => 32 / (median(emb[m]) / 1000);
  out.push(
    "",
    "MiniLM-L6 shape, fp32, 32 inputs of ~12 words per request, through the server:",
    "",
    "| embeddings | inputs/s |",
    "|---|---:|",
    `| before (threads never spin) | ${f1(ips("embed-before"))} |`,
    `| after (spinning within runs) | ${f1(ips("embed-after"))} |`,
    `| fused encoder layout (model_O2.onnx), spinning within runs | ${f1(ips("embed-fused"))} |`,
  );
  goals.push(
    `embeddings: ${(ips("embed-after") / ips("embed-before")).toFixed(2)}x before; fused layout ` +
      `${(ips("embed-fused") / ips("embed-before")).toFixed(2)}x before, ` +
      `${(ips("embed-fused") / ips("embed-after")).toFixed(2)}x the decomposed graph.`,
  );
  console.log([...out, "", ...goals].join("\n"));
} finally {
  await close();
  for (const ctx of Object.values(lib)) ctx.free(), ctx.model.free();
}
