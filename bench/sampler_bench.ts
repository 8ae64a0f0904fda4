// Benchmark of one token's draw at temperature > 0: the llama shim's native sampler (native/sampling.h)
// against the pipeline's JavaScript sampler (src/chat/sampler.ts), over SmolLM2's 49152 and Qwen's 151936
// logits, flat rows (random weights: every token has weight, no candidate floor helps) and peaked ones (a
// trained model's), for plain sampling, top-p 0.95 and top-k 40. On a GPU a 0.5B model's token takes ~1.4 ms,
// so what the server spends drawing it is a visible share of its decode speed.
//   deno run -A bench/sampler_bench.ts [--draws 400]
import { parseArgs } from "node:util";
import { Rng, Sampler } from "../src/chat/sampler.ts";
import { openLlama } from "../src/engines/llama/ffi.ts";

const { values } = parseArgs({ args: Deno.args, options: { draws: { type: "string", default: "400" } } });
const DRAWS = Number(values.draws);
const sym = openLlama();

function row(n: number, peaked: boolean): Float32Array {
  let x = 12345;
  const rand = () => ((x ^= x << 13, x ^= x >>> 17, x ^= x << 5) >>> 0) / 4294967296;
  const r = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    r[i] = peaked ? (rand() < 0.001 ? 10 + rand() * 4 : rand() * 4 - 4) : rand() * 3;
  }
  return r;
}

/** Microseconds per draw (median of 5 batches of DRAWS / 5). */
function time(draw: () => number): number {
  for (let i = 0; i < 20; i++) draw();
  const batches: number[] = [];
  const per = Math.max(1, Math.round(DRAWS / 5));
  for (let b = 0; b < 5; b++) {
    const t0 = performance.now();
    for (let i = 0; i < per; i++) draw();
    batches.push((performance.now() - t0) / per * 1000);
  }
  return batches.sort((a, b) => a - b)[2];
}

const settings = [
  { name: "temperature 1", temperature: 1, topP: 1, topK: 0 },
  { name: "top_p 0.95", temperature: 1, topP: 0.95, topK: 0 },
  { name: "top_k 40", temperature: 1, topP: 1, topK: 40 },
];
console.log("| vocabulary | row | sampling | JavaScript µs | native µs | speed-up |");
console.log("|---:|---|---|---:|---:|---:|");
for (const n of [49152, 151936]) {
  for (const peaked of [false, true]) {
    const logits = row(n, peaked);
    for (const s of settings) {
      const p = { ...s, presencePenalty: 0, frequencyPenalty: 0, logitBias: new Map<number, number>() };
      const js = new Sampler(n);
      const rngA = new Rng(1n);
      const rngB = new Rng(1n);
      const tJs = time(() => js.sampleJs(logits, p, rngA));
      const tNative = time(() => sym.lshim_sample(logits, n, s.temperature, s.topK, s.topP, rngB.state));
      console.log(
        `| ${n} | ${peaked ? "peaked" : "flat"} | ${s.name} | ${tJs.toFixed(0)} | ${tNative.toFixed(0)} | ` +
          `${(tJs / tNative).toFixed(1)}x |`,
      );
    }
  }
}
