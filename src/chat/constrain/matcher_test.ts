import assert from "node:assert/strict";
import { applyMask, ConstrainedLogits, maskCount, maskHas, maskIds } from "./matcher.ts";
import { compileJsonSchema, jsonObjectGrammar } from "./schema.ts";
import { prng, syntheticVocab } from "../../../tests/support/synthetic_vocab.ts";
import { randomSchema, randomWalk, sharedVocab, validate } from "../../../tests/support/constrain_support.ts";
import { VocabIndex } from "./vocab.ts";

Deno.test("matcher: documents generated for random schemas always validate (ajv)", () => {
  const { index, byte } = sharedVocab();
  const rand = prng(2024);
  let docs = 0;
  for (let i = 0; i < 150; i++) {
    const schema = randomSchema(rand);
    const g = compileJsonSchema(schema);
    for (let w = 0; w < 3; w++) {
      const budget = [5, 40, 150][w];
      const { text } = randomWalk(g, index, byte, rand, budget);
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (e) {
        assert.fail(`not JSON: ${text}\nschema ${JSON.stringify(schema)}\n${e}`);
      }
      const err = validate(schema, value);
      assert.equal(err, null, `invalid: ${text}\nschema ${JSON.stringify(schema)}\n${err}`);
      docs++;
    }
  }
  assert.equal(docs, 450);
});

Deno.test("matcher: json_object output always parses to an object", () => {
  const { index, byte } = sharedVocab();
  const rand = prng(9);
  const g = jsonObjectGrammar();
  for (let i = 0; i < 60; i++) {
    const { text } = randomWalk(g, index, byte, rand, [3, 30, 120][i % 3]);
    const v = JSON.parse(text);
    assert.ok(typeof v === "object" && v !== null && !Array.isArray(v), text);
  }
});

Deno.test("matcher: each mask is exactly the set of tokens the recognizer accepts (brute force)", () => {
  // A smaller vocabulary keeps the brute force cheap; it has the same kinds of tokens.
  const vocab = syntheticVocab(6000, 3);
  const ix = VocabIndex.build(vocab.tokens, vocab.eos);
  const byte = new Int32Array(256).map((_, b) => vocab.byText.get(String.fromCharCode(b))!);
  const rand = prng(77);
  const schemas = [
    {
      type: "object",
      properties: {
        s: { type: "string" },
        n: { type: "number", minimum: -5, exclusiveMaximum: 12.5 },
        e: { enum: ["é", 'a"b', 12, 123, null] },
        arr: { type: "array", items: { type: ["integer", "null"] }, minItems: 1, maxItems: 3 },
        o: {
          anyOf: [{ type: "object", properties: { k: { type: "string" } }, required: ["k"] }, {
            type: "boolean",
          }],
        },
      },
      required: ["s", "n", "e", "arr"],
      additionalProperties: false,
    },
    randomSchema(rand),
    randomSchema(rand),
    { type: "number" },
  ];
  let checked = 0;
  for (const schema of schemas) {
    const g = compileJsonSchema(schema);
    for (let run = 0; run < 2; run++) {
      const m = g.matcher(ix);
      for (let step = 0; step < 80 && !m.finished; step++) {
        const mask = m.mask();
        for (let id = 0; id < ix.size; id++) {
          const ok = m.clone().accept(id);
          if (ok !== maskHas(mask, id)) {
            assert.fail(
              `token ${id} ${JSON.stringify(new TextDecoder().decode(ix.tokens[id] ?? new Uint8Array()))}: ` +
                `mask says ${maskHas(mask, id)}, recognizer says ${ok} (schema ${JSON.stringify(schema)})`,
            );
          }
        }
        checked++;
        const ids = maskIds(mask);
        const c = m.completion();
        const id = step > 40 ? (c.length ? byte[c[0]] : ix.eos[0]) : ids[Math.floor(rand() * ids.length)];
        assert.ok(m.accept(id));
      }
    }
  }
  assert.ok(checked > 200, `${checked}`);
});

Deno.test("matcher: after a complete object only EOS is allowed; EOS is refused before", () => {
  const { index, vocab } = sharedVocab();
  const m = compileJsonSchema({ type: "object", properties: { a: { type: "integer" } }, required: ["a"] })
    .matcher(index);
  assert.ok(!maskHas(m.mask(), vocab.eos[0]));
  assert.equal(m.accept(vocab.eos[0]), false);
  assert.ok(m.acceptBytes(new TextEncoder().encode('{"a": 12')));
  // Mid-number: more digits or the closing brace, never EOS yet.
  assert.ok(!m.isComplete());
  assert.ok(m.acceptBytes(new TextEncoder().encode("}")));
  assert.ok(m.isComplete());
  assert.deepEqual(maskIds(m.mask()), [...vocab.eos].sort((a, b) => a - b));
  assert.ok(m.accept(vocab.eos[1]));
  assert.ok(m.finished);
  assert.equal(maskCount(m.mask()), 0);
  // A number at the top level may end or go on: EOS and digits are both allowed.
  const n = compileJsonSchema({ type: "integer" }).matcher(index);
  assert.ok(n.acceptBytes(new TextEncoder().encode("4")));
  const mask = n.mask();
  assert.ok(maskHas(mask, vocab.eos[0]) && maskHas(mask, vocab.byText.get("2")!));
});

Deno.test("matcher: special tokens and tokens that break JSON are never allowed", () => {
  const { index, vocab } = sharedVocab();
  const m = compileJsonSchema({ type: "object", properties: { s: { type: "string" } }, required: ["s"] })
    .matcher(index);
  assert.ok(m.acceptBytes(new TextEncoder().encode('{"s": "')));
  const mask = m.mask();
  assert.ok(!maskHas(mask, 1), "special token without bytes");
  assert.ok(!maskHas(mask, vocab.byText.get("\n")!), "raw newline inside a string");
  assert.ok(maskHas(mask, vocab.byText.get("\\n")!), "escaped newline");
  assert.ok(maskHas(mask, vocab.byText.get('"}')!), "closing the string and the object");
  assert.ok(!maskHas(mask, vocab.byText.get('",')!), "no second property exists");
  // A continuation byte cannot start a character; a lead byte can, then only its continuation may follow.
  assert.ok(!maskHas(mask, vocab.byText.get("\x80")!));
  assert.ok(m.acceptBytes(new Uint8Array([0xe4])));
  const mid = m.mask();
  assert.ok(maskHas(mid, vocab.byText.get("\xb8")!) && !maskHas(mid, vocab.byText.get("a")!));
  assert.ok(!maskHas(mid, vocab.byText.get('"')!), "cannot close inside a character");
});

Deno.test("matcher: masks are memoized per state, and a repeated schema reuses its grammar", () => {
  const { index } = sharedVocab();
  const schema = {
    type: "object",
    properties: { a: { type: "string" } },
    required: ["a"],
    additionalProperties: false,
  };
  const g = compileJsonSchema(schema);
  assert.equal(compileJsonSchema(structuredClone(schema)), g);
  const m1 = g.matcher(index), m2 = g.matcher(index);
  assert.equal(m1.mask(), m2.mask());
  m1.acceptBytes(new TextEncoder().encode('{"a": "x'));
  m2.acceptBytes(new TextEncoder().encode('{"a": "yz'));
  assert.equal(m1.mask(), m2.mask(), "same string state, same cached mask");
});

Deno.test("applyMask: disallowed logits become -Infinity, padded ids past the vocabulary too", () => {
  const mask = new Uint32Array(2);
  for (const id of [0, 5, 31, 32, 40]) mask[id >>> 5] |= 1 << (id & 31);
  const logits = new Float32Array(70).fill(1);
  applyMask(logits, mask);
  const kept = [...logits.keys()].filter((i) => logits[i] === 1);
  assert.deepEqual(kept, [0, 5, 31, 32, 40]);
  assert.ok(logits.every((v, i) => kept.includes(i) || v === -Infinity));
  assert.equal(maskCount(mask), 5);
  const full = new Uint32Array(2).fill(0xffffffff), row = new Float32Array(64).fill(2);
  applyMask(row, full);
  assert.ok(row.every((v) => v === 2));
});

Deno.test("ConstrainedLogits: masks rows, follows tokens, and ends with EOS after a refused token", () => {
  const { index, vocab } = sharedVocab();
  const p = new ConstrainedLogits(jsonObjectGrammar(), index);
  const row = new Float32Array(index.size + 64).fill(0);
  p.process(row);
  const brace = vocab.byText.get("{")!;
  assert.equal(row[brace], 0);
  assert.equal(row[vocab.byText.get("[")!], -Infinity);
  assert.equal(row[index.size + 10], -Infinity);
  p.accept(brace);
  assert.ok(p.ok);
  p.accept(vocab.byText.get("]")!); // refused: only EOS from now on
  assert.ok(!p.ok);
  const row2 = new Float32Array(index.size).fill(0);
  p.process(row2);
  assert.deepEqual([...row2.keys()].filter((i) => row2[i] === 0), vocab.eos);
});
