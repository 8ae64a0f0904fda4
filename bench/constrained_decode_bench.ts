// Benchmark of constrained decoding end to end (issue 7): decode tokens/s of the chat engine on the
// SmolLM2-135M-shaped generated model (vocab 49152) with a json_schema constraint against unconstrained
// decoding of the same prompt, in one run, on CPU with 2 threads. The engine is driven
// in-process exactly as the server drives it (BudgetedConstraint over the per-tokenizer vocabulary index, the
// per-choice output parser), with seeded sampling at temperature 1 so the random weights write long strings
// that the budget has to close. The first constrained run (every state's mask and closing check computed,
// the vocabulary index built) is reported apart; rounds are interleaved and medians compared.
// Goal: the constraint costs at most 10% of decode speed.
//
//   deno run -A bench/constrained_decode_bench.ts [--model DIR] [--dtype fp32|q8|q4] [--rounds 7]
//                                                 [--threads 2] [--new-tokens 96]
// DIR defaults to the generated SmolLM2-135M-shaped model (`deno task models:bench`).
import { parseArgs } from "node:util";
import { basename, join, resolve } from "node:path";
import { createLogger } from "../src/log.ts";
import { loadChatBackend } from "../src/engines/transformers/chat_backend.ts";
import { vocabIndexOf } from "../src/chat/constraint.ts";
import { runChat } from "../src/chat/pipeline.ts";
import type {
  ChatBackend,
  ChatJob,
  ChatMessage,
  ChatResponseFormat,
  ModelEntry,
  SequenceId,
} from "../src/engines/types.ts";
import { fixedLengthJob, median } from "./stats.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const { values } = parseArgs({
  args: Deno.args,
  options: {
    model: { type: "string", default: join(ROOT, "models/generated/bench/smollm2-135m-instruct") },
    dtype: { type: "string", default: "fp32" },
    rounds: { type: "string", default: "7" },
    threads: { type: "string", default: "2" },
    "new-tokens": { type: "string", default: "96" },
  },
});
const modelDir = resolve(values.model);
const rounds = Number(values.rounds);
const newTokens = Number(values["new-tokens"]);
const SEED = 20240601n;

/** A typical extraction schema: nested object, enums, numbers, nullable, arrays of objects. */
const SCHEMA = {
  type: "object",
  properties: {
    title: { type: "string" },
    status: { enum: ["open", "closed", "pending"] },
    priority: { type: "integer", minimum: 1, maximum: 5 },
    owner: {
      type: "object",
      properties: { name: { type: "string" }, email: { type: ["string", "null"] } },
      required: ["name", "email"],
      additionalProperties: false,
    },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: {
          sku: { type: "string" },
          qty: { type: "integer", minimum: 0 },
          price: { type: "number" },
        },
        required: ["sku", "qty", "price"],
        additionalProperties: false,
      },
    },
    notes: { anyOf: [{ type: "string" }, { type: "null" }] },
  },
  required: ["title", "status", "priority", "owner", "items", "notes"],
  additionalProperties: false,
};

try {
  Deno.statSync(join(modelDir, "config.json"));
} catch {
  console.error(`${modelDir} is missing: run \`deno task models:bench\` first`);
  Deno.exit(1);
}

const log = createLogger("json", () => {});
const entry: ModelEntry = {
  id: basename(modelDir),
  task: "chat",
  engine: "transformers",
  path: modelDir,
  dtype: values.dtype,
  device: "cpu",
  options: {},
  created: 0,
  ownedBy: "bench",
};
const engine = await loadChatBackend(entry, {
  modelsDir: resolve(modelDir, ".."),
  threads: Number(values.threads),
  allowRemote: false,
  log,
});

try {
  const messages: ChatMessage[] = [{
    role: "user",
    content: "Extract the order from this note as JSON: two boxes of blue paint for the river market, " +
      "urgent, owner Ann at the harbour office, no email.",
  }];
  const promptLength = engine.render(messages).length;
  const base: ChatJob = { ...fixedLengthJob(messages, newTokens), seed: SEED };
  const t0 = performance.now();
  const index = vocabIndexOf(engine);
  const indexMs = performance.now() - t0;

  interface Timing {
    tps: number;
    tokens: number;
    text: string;
    /** Pipeline time per token outside the model's steps (sampling, text, and the constraint when on). */
    outsideMs: number;
  }

  // The model's steps are timed by a wrapper, so what the pipeline spends around them (the constraint's
  // share, by difference) is known whatever the machine's noise.
  let inModel = 0;
  const timed: ChatBackend = {
    entry: engine.entry,
    backend: engine.backend,
    contextLength: engine.contextLength,
    vocabSize: engine.vocabSize,
    eosIds: engine.eosIds,
    tokenizerJson: engine.tokenizerJson,
    chatTemplate: engine.chatTemplate,
    defaults: engine.defaults,
    render: (m, t, o) => engine.render(m, t, o),
    encode: (text, addSpecial) => engine.encode(text, addSpecial),
    tokenId: (piece) => engine.tokenId(piece),
    decode: (ids) => engine.decode(ids),
    tokenText: (id) => engine.tokenText(id),
    open: () => engine.open(),
    fork: (seq: SequenceId) => engine.fork(seq),
    close: (seq: SequenceId) => engine.close(seq),
    prefill: (seq, ids) => engine.prefill(seq, ids),
    step: async (seq, token) => {
      const t = performance.now();
      const row = await engine.step(seq, token);
      inModel += performance.now() - t;
      return row;
    },
    dispose: () => engine.dispose(),
  };

  /** One generation through the pipeline; decode tokens/s from the first delta to the finish. */
  const runOnce = async (format: ChatResponseFormat | null): Promise<Timing> => {
    // Constrained: the document ends the choice (eos allowed), as the server runs it.
    const job: ChatJob = { ...base, responseFormat: format, ignoreEos: format === null };
    let first = 0;
    let end = 0;
    let tokens = 0;
    let text = "";
    let modelAtFirst = 0;
    for await (const ev of runChat(timed, job)) {
      if (ev.type === "delta") {
        if (!first) {
          first = performance.now();
          modelAtFirst = inModel;
        }
        text += ev.delta.content ?? "";
      } else if (ev.type === "finish") {
        end = performance.now();
        tokens = ev.completionTokens;
      }
    }
    const decodeMs = end - first;
    return {
      tps: (tokens - 1) / (decodeMs / 1000),
      tokens,
      text,
      outsideMs: (decodeMs - (inModel - modelAtFirst)) / Math.max(1, tokens - 1),
    };
  };

  const variants: [string, () => ChatResponseFormat | null][] = [
    ["unconstrained", () => null],
    ["json_schema", () => ({ type: "json_schema", name: "order", schema: SCHEMA, strict: true })],
  ];
  // Cold: the first constrained run meets every state for the first time.
  const cold: Record<string, Timing> = {};
  for (const [name, grammar] of variants) cold[name] = await runOnce(grammar());
  for (const [name] of variants.slice(1)) {
    const t = cold[name];
    try {
      JSON.parse(t.text);
    } catch {
      throw new Error(`${name}: the output is not JSON: ${t.text}`);
    }
    if (t.tokens < 64) throw new Error(`${name}: only ${t.tokens} tokens (want 64+): ${t.text}`);
  }
  const runs: Record<string, Timing[]> = Object.fromEntries(variants.map(([n]) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...variants].reverse() : variants;
    for (const [name, grammar] of order) runs[name].push(await runOnce(grammar()));
  }
  const baseTps = median(runs.unconstrained.map((t) => t.tps));
  const lines = [
    `Model: ${modelDir} (${engine.backend}), threads ${values.threads}, prompt ${promptLength} tokens, ` +
    `up to ${newTokens} new tokens, temperature 1 (seeded), ${rounds} interleaved rounds; vocabulary index ` +
    `(${index.size} tokens) built in ${indexMs.toFixed(0)} ms, once per tokenizer.`,
    "",
    "| decoding | median tokens | median decode tokens/s | vs unconstrained | first run tokens/s |",
    "|---|---:|---:|---:|---:|",
    ...variants.map(([name]) => {
      const tps = median(runs[name].map((t) => t.tps));
      return `| ${name} | ${median(runs[name].map((t) => t.tokens))} | ${tps.toFixed(2)} | ${
        (tps / baseTps * 100).toFixed(1)
      }% | ${cold[name].tps.toFixed(2)} |`;
    }),
    "",
  ];
  // Per-round ratios (the two ran back to back), so drift and other load hit both alike.
  const cost = 1 - median(runs.json_schema.map((t, r) => t.tps / runs.unconstrained[r].tps));
  const outside = (name: string) => median(runs[name].map((t) => t.outsideMs));
  const perToken = outside("json_schema") - outside("unconstrained");
  const coldPerToken = cold.json_schema.outsideMs - cold.unconstrained.outsideMs;
  lines.push(
    `Time in the constraint (pipeline time outside the model's steps, constrained minus unconstrained): ` +
      `warm ${perToken.toFixed(3)} ms per token (median), ${(perToken * baseTps / 10).toFixed(1)}% of an ` +
      `unconstrained decode step (${(1000 / baseTps).toFixed(1)} ms); cold (first run, every state new) ` +
      `${coldPerToken.toFixed(3)} ms per token.`,
    `json_schema constraint cost: ${(cost * 100).toFixed(1)}% of decode speed (median of per-round ratios; ` +
      `goal <= 10%) ${cost <= 0.1 ? "met" : "NOT met"}`,
    `Sample json_schema output (${runs.json_schema[0].tokens} tokens): \`${
      runs.json_schema[0].text.replace(/\s+/g, " ").slice(0, 160)
    }...\``,
  );
  console.log(lines.join("\n"));
} finally {
  await engine.dispose();
}
