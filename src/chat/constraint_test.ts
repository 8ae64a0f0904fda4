// Tests the budgeted constraint as the chat engine drives it (process, sample, accept) on the 49152-token
// synthetic vocabulary: whatever the logits favour, even tokens that never close a string, every document
// ends with end-of-sequence within its budget, parses and validates (ajv); "end" comes exactly when only
// end-of-sequence is left; the budget marks the output truncated only when it overrode the model.
import assert from "node:assert/strict";
import { compileJsonSchema, jsonObjectGrammar, maskHas } from "./constrain/mod.ts";
import { prng } from "../../tests/support/synthetic_vocab.ts";
import { randomSchema, sharedVocab, validate } from "../../tests/support/constrain_support.ts";
import { BudgetedConstraint, planTokens, tokensToWrite, vocabIndexOf } from "./constraint.ts";
import type { Grammar, VocabIndex } from "./constrain/mod.ts";

/** Drives one choice like the engine: returns the text, tokens used and whether EOS ended it. */
function run(
  g: Grammar,
  ix: VocabIndex,
  budget: number,
  logits: (row: Float32Array, step: number) => void,
  rand: () => number,
) {
  const p = new BudgetedConstraint(g, ix, budget);
  const out: number[] = [];
  const row = new Float32Array(ix.size + 7); // models pad their output layer
  let ended = false;
  let ends = 0;
  let used = 0;
  for (; used < budget; used++) {
    logits(row, used);
    if (p.process(row) === "end") ends++;
    // Sampling over what is left (temperature 1).
    let max = -Infinity;
    for (const v of row) if (v > max) max = v;
    assert.ok(max > -Infinity, "every token was masked");
    let total = 0;
    for (let i = 0; i < row.length; i++) total += Math.exp(row[i] - max);
    let r = rand() * total;
    let token = 0;
    for (let i = 0; i < row.length; i++) {
      const w = Math.exp(row[i] - max);
      if (w === 0) continue;
      token = i;
      r -= w;
      if (r < 0) break;
    }
    p.accept(token);
    assert.ok(p.ok, "a masked token was sampled");
    if (ix.eos.includes(token)) {
      ended = true;
      used++;
      break;
    }
    out.push(...ix.tokens[token]!);
  }
  return { text: new TextDecoder().decode(new Uint8Array(out)), used, ended, ends, truncated: p.truncated };
}

/** Logits that love plain letters and shun quotes and closing brackets: strings never end on their own. */
function neverClose(ix: VocabIndex, rand: () => number) {
  const bias = new Float32Array(ix.size + 7).fill(-Infinity);
  for (let id = 0; id < ix.size; id++) {
    const t = ix.tokens[id];
    if (!t) continue;
    const closes = t.some((b) => b === 0x22 || b === 0x7d || b === 0x5d);
    bias[id] = closes ? -8 : 2;
  }
  for (const id of ix.eos) bias[id] = -8;
  return (row: Float32Array) => {
    for (let i = 0; i < row.length; i++) row[i] = bias[i] + rand();
  };
}

Deno.test("budgeted constraint: random schemas close within the budget and validate", () => {
  const { index } = sharedVocab();
  const rand = prng(11);
  const logits = neverClose(index, rand);
  let truncated = 0;
  for (let i = 0; i < 40; i++) {
    const schema = randomSchema(rand);
    const g = compileJsonSchema(schema);
    // From exactly enough for the shortest document (and EOS) to much more.
    const least = tokensToWrite(index.full, g.matcher(index).completion()) + 1;
    const budget = least + (i % 4 === 0 ? 0 : Math.floor(rand() * 80));
    const r = run(g, index, budget, logits, rand);
    assert.ok(r.ended, `no end within ${budget}: ${r.text}`);
    assert.ok(r.used <= budget);
    const err = validate(schema, JSON.parse(r.text));
    assert.equal(err, null, `${r.text}\n${JSON.stringify(schema)}`);
    if (r.truncated) truncated++;
  }
  // These logits never close a string: most documents had to be closed by the budget.
  assert.ok(truncated > 10, `only ${truncated} truncated`);
});

Deno.test("budgeted constraint: json_object with neutral logits; tight budgets", () => {
  const { index } = sharedVocab();
  const rand = prng(5);
  const g = jsonObjectGrammar();
  for (const budget of [3, 4, 8, 30, 200]) {
    const r = run(g, index, budget, (row) => {
      for (let i = 0; i < row.length; i++) row[i] = rand() * 4;
    }, rand);
    assert.ok(r.ended, `budget ${budget}: ${r.text}`);
    const v = JSON.parse(r.text);
    assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), r.text);
  }
});

Deno.test("budgeted constraint: a model that closes by itself is not marked truncated", () => {
  const { index, byte } = sharedVocab();
  const g = compileJsonSchema({
    type: "object",
    properties: { a: { type: "boolean" } },
    required: ["a"],
    additionalProperties: false,
  });
  // The model wants `{"a":true}` byte by byte, then EOS.
  const want = [...new TextEncoder().encode('{"a":true}')].map((b) => byte[b]);
  const r = run(g, index, 64, (row, step) => {
    row.fill(0);
    row[step < want.length ? want[step] : index.eos[0]] = 20;
  }, prng(1));
  assert.equal(r.text, '{"a":true}');
  assert.equal(r.truncated, false);
  assert.equal(r.used, want.length + 1);
  // Too few tokens to write it byte by byte: still a valid document, closed because it had to be.
  const tight = run(g, index, 8, (row, step) => {
    row.fill(0);
    row[step < want.length ? want[step] : index.eos[0]] = 20;
  }, prng(1));
  assert.ok(tight.ended);
  assert.equal(typeof JSON.parse(tight.text).a, "boolean");
  assert.equal(tight.truncated, true);
});

Deno.test("budgeted constraint: 'end' exactly when only EOS may follow", () => {
  const { index } = sharedVocab();
  const g = compileJsonSchema({ enum: ["x"] });
  const p = new BudgetedConstraint(g, index, 50);
  const row = new Float32Array(index.size);
  assert.equal(p.process(row), undefined);
  for (const b of new TextEncoder().encode('"x"')) {
    const id = index.tokens.findIndex((t) => t?.length === 1 && t[0] === b);
    p.accept(id);
  }
  row.fill(0);
  assert.equal(p.process(row), "end");
  const finite = [...row.keys()].filter((i) => row[i] > -Infinity);
  assert.deepEqual(finite.sort(), [...index.eos].sort());
  assert.ok(maskHas(p.matcher.mask(), index.eos[0]));
});

Deno.test("planTokens: the fewest tokens that write the bytes exactly", () => {
  const { index, vocab } = sharedVocab();
  const enc = new TextEncoder();
  assert.deepEqual(planTokens(index.full, enc.encode("")), []);
  assert.equal(tokensToWrite(index.full, enc.encode("}")), 1);
  for (const text of ['"}]}', '","name":"","tags":[]}', 'é😀"}', '{"a":0,"b":null}']) {
    const bytes = enc.encode(text);
    const plan = planTokens(index.full, bytes)!;
    const written = plan.flatMap((id) => [...index.tokens[id]!]);
    assert.deepEqual(written, [...bytes], text);
    assert.ok(plan.length <= bytes.length);
    // No single token covers a two-token stretch the plan could have merged.
    for (let i = 0; i + 1 < plan.length; i++) {
      const joined = String.fromCharCode(...index.tokens[plan[i]]!, ...index.tokens[plan[i + 1]]!);
      assert.equal(vocab.byText.has(joined), false, `${text}: ${JSON.stringify(joined)} is one token`);
    }
  }
  assert.equal(planTokens(VocabIndexOfBytes(["a"]).full, enc.encode("ab")), null);
});

/** A tiny index over the given one-byte-per-char tokens. */
function VocabIndexOfBytes(tokens: string[]): VocabIndex {
  return vocabIndexOf({
    tokenizerJson: {
      model: { type: "BPE", vocab: Object.fromEntries(tokens.map((t, i) => [t, i])) },
      decoder: { type: "ByteLevel" },
      added_tokens: [{ id: tokens.length, content: "<eos>", special: true }],
    },
    eosIds: new Set([tokens.length]),
  });
}

Deno.test("vocabIndexOf: one index per tokenizer object", () => {
  const json = {
    model: { type: "BPE", vocab: { a: 0, b: 1, "{": 2, "}": 3 } },
    decoder: { type: "ByteLevel" },
    added_tokens: [{ id: 4, content: "<eos>", special: true }],
  };
  const engine = { tokenizerJson: json, eosIds: new Set([4]) };
  const a = vocabIndexOf(engine);
  assert.equal(vocabIndexOf(engine), a);
  assert.equal(a.size, 5);
  assert.deepEqual(a.eos, [4]);
  assert.notEqual(vocabIndexOf({ tokenizerJson: { ...json }, eosIds: new Set([4]) }), a);
  assert.throws(() => vocabIndexOf({ tokenizerJson: null, eosIds: new Set() }));
});
