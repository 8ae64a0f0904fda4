// Benchmark of the constrained-decoding core (issue 7): per-step mask cost on a 49152-token byte-level
// vocabulary (SmolLM2-sized), for a nested json_schema, json_object and a forced tool call, cold (fresh
// grammar: every state's mask computed once) and warm (same grammar again: masks come from the cache), plus
// the vocabulary index build. Baseline measured in the same run: one softmax + sample over the same 49152
// logits, the least an unconstrained decode step spends outside the model. The end-to-end figure (decode
// tokens/s with vs without the constraint on the SmolLM2-shaped model) belongs to the chat engine's bench.
//
//   deno run -A bench/constrain_bench.ts [--tokens 200] [--runs 20]
import { applyMask, type Grammar, maskIds } from "../src/chat/constrain/matcher.ts";
import { compileJsonSchema, jsonObjectGrammar } from "../src/chat/constrain/schema.ts";
import { prng, syntheticVocab } from "../tests/support/synthetic_vocab.ts";
import { tokenBytesFromTokenizerJson } from "../src/chat/constrain/token_bytes.ts";
import { toolCallGrammar } from "../src/chat/constrain/tool_grammar.ts";
import { VocabIndex } from "../src/chat/constrain/vocab.ts";

const args = Deno.args;
const flag = (name: string, dflt: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const TOKENS = flag("--tokens", 200);
const RUNS = flag("--runs", 20);
const VOCAB = 49152;

const SCHEMA = {
  type: "object",
  properties: {
    id: { type: "integer", minimum: 0 },
    name: { type: "string" },
    status: { enum: ["active", "inactive", "pending", "archived"] },
    score: { type: "number", minimum: 0, maximum: 100 },
    owner: {
      type: "object",
      properties: {
        login: { type: "string" },
        email: { type: ["string", "null"] },
        roles: { type: "array", items: { enum: ["admin", "editor", "viewer"] }, maxItems: 3 },
      },
      required: ["login", "email", "roles"],
      additionalProperties: false,
    },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: {
          sku: { type: "string" },
          qty: { type: "integer", minimum: 1, maximum: 999 },
          price: { type: "number" },
          tags: { type: "array", items: { type: "string" } },
        },
        required: ["sku", "qty", "price", "tags"],
        additionalProperties: false,
      },
    },
    notes: { anyOf: [{ type: "string" }, { type: "null" }] },
  },
  required: ["id", "name", "status", "score", "owner", "items", "notes"],
  additionalProperties: false,
};

const TOOLS = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
  {
    name: "search_web",
    parameters: {
      type: "object",
      properties: { query: { type: "string" }, limit: { type: "integer", minimum: 1, maximum: 50 } },
      required: ["query", "limit"],
      additionalProperties: false,
    },
  },
  { name: "get_time", parameters: { type: "object", properties: {}, additionalProperties: false } },
];

function percentile(xs: number[], p: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

interface Walk {
  mask: number[];
  apply: number[];
  accept: number[];
  tokens: number;
}

/**
 * One random walk: each step takes a mask, applies it to a logits row, picks an allowed token (a third of
 * the time one that holds a quote, so strings end like a model's would), accepts it; after `TOKENS` it
 * closes the document along the shortest completion.
 */
function walk(g: Grammar, ix: VocabIndex, seed: number, logits: Float32Array, w: Walk): void {
  const rand = prng(seed);
  const m = g.matcher(ix);
  const tokens = ix.tokens;
  for (let step = 0; step < TOKENS * 3; step++) {
    let t = performance.now();
    const mask = m.mask();
    w.mask.push(performance.now() - t);
    logits.fill(0);
    t = performance.now();
    applyMask(logits, mask);
    w.apply.push(performance.now() - t);
    let id: number;
    if (step >= TOKENS) {
      const c = m.completion();
      if (c.length === 0) break;
      id = singleByte[c[0]];
    } else {
      const ids = maskIds(mask);
      if (ids.length === 0) throw new Error("dead end");
      const quoted = rand() < 0.33 ? ids.filter((i) => tokens[i]?.includes(0x22)) : [];
      const from = quoted.length ? quoted : ids;
      id = from[Math.floor(rand() * from.length)];
      if (ix.eos.includes(id)) break;
    }
    t = performance.now();
    if (!m.accept(id)) throw new Error("accept refused an allowed token");
    w.accept.push(performance.now() - t);
    w.tokens++;
  }
  if (!m.isComplete()) throw new Error("walk did not complete");
}

// ------------------------------------------------------------------------------------------- run

let t = performance.now();
const vocab = syntheticVocab(VOCAB);
const vocabMs = performance.now() - t;
const builds: number[] = [];
let ix!: VocabIndex;
for (let i = 0; i < 3; i++) {
  t = performance.now();
  ix = VocabIndex.build(vocab.tokens, vocab.eos);
  builds.push(performance.now() - t);
}
const singleByte = new Int32Array(256);
for (let b = 0; b < 256; b++) singleByte[b] = vocab.byText.get(String.fromCharCode(b))!;

// Baseline: softmax + one multinomial draw over the same number of logits.
const logits = new Float32Array(VOCAB);
const base: number[] = [];
{
  const rand = prng(3);
  const probs = new Float32Array(VOCAB);
  for (let r = 0; r < 300; r++) {
    for (let i = 0; i < VOCAB; i++) logits[i] = rand() * 10;
    const s = performance.now();
    let max = -Infinity;
    for (let i = 0; i < VOCAB; i++) if (logits[i] > max) max = logits[i];
    let sum = 0;
    for (let i = 0; i < VOCAB; i++) sum += probs[i] = Math.exp(logits[i] - max);
    let u = rand() * sum, pick = 0;
    while (pick < VOCAB - 1 && (u -= probs[pick]) > 0) pick++;
    base.push(performance.now() - s);
  }
}
const baseMs = mean(base.slice(50));

const cases: [string, (run: number) => Grammar][] = [
  [
    "json_schema (nested object/array/enum)",
    (run) => compileJsonSchema({ ...SCHEMA, $comment: `run ${run}` }),
  ],
  ["json_object", (run) => run === 0 ? jsonObjectGrammar() : freshObject(run)],
  ["tool call (3 tools, parallel)", (run) => toolCallGrammar(TOOLS, { parallel: true, maxCalls: 2 + run })],
];

/** `{type: "object"}` compiles to the same grammar as json_object; a distinct comment per run keeps it cold. */
function freshObject(run: number): Grammar {
  return compileJsonSchema({ type: "object", $comment: `run ${run}` });
}

// Warm the JIT on a throwaway grammar so the first case is not charged for compilation of the code itself.
for (let i = 0; i < 3; i++) {
  walk(compileJsonSchema({ ...SCHEMA, $comment: `jit ${i}` }), ix, 100 + i, logits, {
    mask: [],
    apply: [],
    accept: [],
    tokens: 0,
  });
}

const rows: string[] = [];
for (const [name, make] of cases) {
  const cold: Walk = { mask: [], apply: [], accept: [], tokens: 0 };
  const warm: Walk = { mask: [], apply: [], accept: [], tokens: 0 };
  for (let run = 0; run < RUNS; run++) {
    const g = make(run);
    walk(g, ix, run, logits, cold);
    walk(g, ix, run, logits, warm); // same walk again: every mask is cached
  }
  for (const [label, w] of [["cold", cold], ["warm", warm]] as const) {
    const per = mean(w.mask) + mean(w.apply) + mean(w.accept);
    rows.push(
      `| ${name} | ${label} | ${(w.tokens / RUNS).toFixed(0)} | ${mean(w.mask).toFixed(3)} | ${
        percentile(w.mask, 0.99).toFixed(3)
      } | ${Math.max(...w.mask).toFixed(2)} | ${mean(w.apply).toFixed(3)} | ${mean(w.accept).toFixed(4)} | ${
        per.toFixed(3)
      } | ${(per / baseMs).toFixed(2)}x | ${(100 * per / 20).toFixed(1)}% |`,
    );
  }
}

console.log(`\n## Constrained decoding core (vocab ${VOCAB}, ${RUNS} runs x ~${TOKENS} tokens)\n`);
console.log(
  `Vocabulary: ${ix.stats.usable} usable tokens, trie ${ix.stats.fullNodes} nodes; ${ix.stats.specialTokens} ` +
    `string-special tokens (trie ${ix.stats.specialNodes} nodes). Synthetic vocab generated in ${
      vocabMs.toFixed(0)
    } ms.`,
);
console.log(
  `Index build (once per tokenizer): ${Math.min(...builds).toFixed(1)} ms best of 3, ${
    mean(builds).toFixed(1)
  } ms mean.`,
);
console.log(`Baseline (softmax + sample over ${VOCAB} logits): ${baseMs.toFixed(3)} ms/step.`);
// The generated SmolLM2-shaped model's own tokenizer (when present): the path the chat engine takes.
const smol = new URL("../models/generated/bench/smollm2-135m-instruct/tokenizer.json", import.meta.url);
try {
  const json = JSON.parse(await Deno.readTextFile(smol));
  t = performance.now();
  const bytes = tokenBytesFromTokenizerJson(json);
  const mid = performance.now();
  const real = VocabIndex.build(bytes, [0, 2]);
  console.log(
    `Generated SmolLM2-135M tokenizer.json (${bytes.length} ids): token bytes ${
      (mid - t).toFixed(1)
    } ms + index ` +
      `${(performance.now() - mid).toFixed(1)} ms (trie ${real.stats.fullNodes} nodes).`,
  );
} catch {
  console.log("(generated SmolLM2 tokenizer not present: `deno task models:bench` makes it)");
}
console.log("");
console.log(
  "| grammar | cache | tokens/run | mask mean ms | mask p99 ms | mask max ms | applyMask ms | accept ms | total ms/step | vs baseline | of a 20 ms decode step |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
