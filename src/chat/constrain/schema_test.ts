import assert from "node:assert/strict";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";
import { type Grammar, maskHas } from "./matcher.ts";
import { compileJsonSchema, jsonObjectGrammar, SchemaError } from "./schema.ts";
import { prng } from "../../../tests/support/synthetic_vocab.ts";
import { randomWalk, sharedVocab, validate } from "../../../tests/support/constrain_support.ts";

const enc = new TextEncoder();

/** Whether the grammar accepts the whole text as a complete document. */
function accepts(g: Grammar, text: string | Uint8Array): boolean {
  const { index } = sharedVocab();
  const m = g.matcher(index);
  return m.acceptBytes(typeof text === "string" ? enc.encode(text) : text) && m.isComplete();
}

function schemaError(schema: unknown, strict = true): SchemaError {
  try {
    compileJsonSchema(schema, { strict });
  } catch (e) {
    if (e instanceof SchemaError) return e;
    throw e;
  }
  assert.fail(`compiled: ${JSON.stringify(schema)}`);
}

Deno.test("schema: strict mode names the unsupported keyword and where it is", () => {
  const cases: [unknown, string, string][] = [
    [
      { type: "object", properties: { email: { type: "string", pattern: "^a" } } },
      "pattern",
      "#/properties/email",
    ],
    [{ type: "string", format: "email" }, "format", "#"],
    [{ type: "array", items: { type: "string", minLength: 2 } }, "minLength", "#/items"],
    [{ oneOf: [{ type: "string" }] }, "oneOf", "#"],
    [{ allOf: [{ type: "string" }] }, "allOf", "#"],
    [{ type: "object", properties: { "a/b": { not: { type: "null" } } } }, "not", "#/properties/a~1b"],
    [{ if: { type: "string" }, then: { type: "string" } }, "if", "#"],
    [{ anyOf: [{ type: "number" }, { type: "number", multipleOf: 2 }] }, "multipleOf", "#/anyOf/1"],
    [
      { $ref: "#/$defs/x", $defs: { x: { type: "object", patternProperties: {} } } },
      "patternProperties",
      "#/$defs/x",
    ],
    [{ type: "array", uniqueItems: true }, "uniqueItems", "#"],
    [{ type: "string", nullable: true }, "nullable", "#"],
  ];
  for (const [schema, keyword, path] of cases) {
    const e = schemaError(schema);
    assert.equal(e.reason, "unsupported");
    assert.equal(e.keyword, keyword, JSON.stringify(schema));
    assert.equal(e.path, path, JSON.stringify(schema));
    assert.match(e.message, new RegExp(`"${keyword}"`));
  }
});

Deno.test("schema: non-strict mode ignores what it cannot enforce and says so; oneOf reads as anyOf", () => {
  const g = compileJsonSchema(
    {
      type: "object",
      properties: { e: { type: "string", format: "email" }, n: { oneOf: [{ type: "null" }] } },
    },
    { strict: false },
  );
  assert.deepEqual(g.ignored, [{ keyword: "format", path: "#/properties/e" }]);
  assert.ok(accepts(g, '{"e": "x", "n": null}'));
  assert.ok(!accepts(g, '{"e": "x", "n": 1}'));
});

Deno.test("schema: malformed or unsatisfiable schemas are typed errors, never crashes", () => {
  const cases: [unknown, string][] = [
    [{ type: "strnig" }, "type"],
    [{ type: 3 }, "type"],
    [{ $ref: "#/$defs/missing" }, "$ref"],
    [{ $ref: "https://example.com/s.json" }, "$ref"],
    [
      { type: "object", properties: { a: { type: "string" } }, required: ["b"], additionalProperties: false },
      "required",
    ],
    [{ enum: [] }, "enum"],
    [{ type: "array", minItems: -1 }, "minItems"],
    [{ type: "object", properties: "nope" }, "properties"],
    [{ type: "number", minimum: "1" }, "minimum"],
    [{ anyOf: [] }, "anyOf"],
    ["a string", ""],
    [{ type: "object", properties: { self: { $ref: "#" } }, required: ["self"] }, ""],
    [{ type: "string", enum: [1, 2] }, ""],
    [{ type: "array", minItems: 3, maxItems: 1 }, ""],
    [{ $ref: "#/$defs/a", $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } } }, ""],
  ];
  for (const [schema, keyword] of cases) {
    const e = schemaError(schema);
    assert.equal(e.reason, "invalid", JSON.stringify(schema));
    assert.equal(e.keyword, keyword, JSON.stringify(schema));
  }
});

Deno.test("schema: oversized schemas are errors, and very deep documents do not overflow anything", () => {
  let deep: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < 5000; i++) deep = { type: "array", items: deep };
  assert.equal(schemaError(deep).reason, "invalid");
  assert.equal(schemaError({ enum: Array.from({ length: 20_000 }, (_, i) => i) }).keyword, "enum");
  // json_object allows any nesting; a model opening 20000 arrays must not crash the matcher.
  const { index, vocab } = sharedVocab();
  const m = jsonObjectGrammar().matcher(index);
  assert.ok(m.acceptBytes(enc.encode('{"a": ' + "[".repeat(20_000))));
  assert.ok(maskHas(m.mask(), vocab.byText.get("]")!));
  assert.equal(m.completion().length, 20_001);
});

Deno.test("schema: accepts exactly the valid documents of a hand-written schema", () => {
  const schema = {
    type: "object",
    properties: {
      name: { type: "string" },
      kind: { enum: ["a", "b", 1, 12, null] },
      n: { type: "integer", minimum: 0, exclusiveMaximum: 100 },
      tags: { type: "array", items: { type: "string" }, minItems: 1, maxItems: 2 },
      opt: { type: "boolean" },
      nested: { anyOf: [{ type: "null" }, { $ref: "#/$defs/p" }] },
    },
    required: ["name", "kind", "n", "tags", "nested"],
    additionalProperties: false,
    $defs: {
      p: {
        type: "object",
        properties: { x: { type: "number" } },
        required: ["x"],
        additionalProperties: false,
      },
    },
  };
  const g = compileJsonSchema(schema);
  const good = [
    '{"name": "é\\u00e9\\n\\"中😀", "kind": "a", "n": 0, "tags": ["x"], "nested": null}',
    '{"name":"","kind":12,"n":99,"tags":["x", "y"],"opt":true,"nested":{"x":-0.5}}',
    '{ "name": "a", "kind": null, "n": 5, "tags": [ "" ], "nested": { "x": 3 } }',
    '{"name": "a",\n"kind": 1, "n": 5, "tags": ["q"], "nested": null}',
  ];
  const bad = [
    '{"name": "a", "kind": "c", "n": 5, "tags": ["q"], "nested": null}', // enum
    '{"name": "a", "kind": 123, "n": 5, "tags": ["q"], "nested": null}', // enum prefix
    '{"name": "a", "kind": "a", "n": 100, "tags": ["q"], "nested": null}', // exclusiveMaximum
    '{"name": "a", "kind": "a", "n": 1.5, "tags": ["q"], "nested": null}', // integer
    '{"name": "a", "kind": "a", "n": 05, "tags": ["q"], "nested": null}', // leading zero
    '{"name": "a", "kind": "a", "n": 1, "tags": [], "nested": null}', // minItems
    '{"name": "a", "kind": "a", "n": 1, "tags": ["a","b","c"], "nested": null}', // maxItems
    '{"name": "a", "kind": "a", "n": 1, "tags": ["q"]}', // required
    '{"name": "a", "kind": "a", "n": 1, "tags": ["q"], "nested": null, "extra": 1}', // additionalProperties
    '{"kind": "a", "name": "a", "n": 1, "tags": ["q"], "nested": null}', // order
    '{"name": "a", "kind": "a", "n": 1, "tags": ["q"], "nested": {}}', // anyOf/$ref required x
    '{"name": "a\tb", "kind": "a", "n": 1, "tags": ["q"], "nested": null}', // raw control character
    '{"name": "\\x", "kind": "a", "n": 1, "tags": ["q"], "nested": null}', // bad escape
    '{"name":  "a", "kind": "a", "n": 1, "tags": ["q"], "nested": null}', // two spaces in a row
    '{"name": "a", "kind": "a", "n": 1, "tags": ["q"], "nested": null}\n', // trailing whitespace
    '{"name": "a", "kind": "a", "n": 1, "tags": ["q"], "nested": null}}',
    '{"name": "a", "kind": "a", "n": 1e2, "tags": ["q"], "nested": null}', // exponent (not generated)
  ];
  for (const t of good) {
    assert.ok(accepts(g, t), t);
    assert.equal(validate(schema, JSON.parse(t)), null, t);
  }
  for (const t of bad) assert.ok(!accepts(g, t), t);
  // Invalid UTF-8 inside strings: overlong, surrogate, out of range, stray continuation.
  for (const seq of [[0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf5, 0x80, 0x80, 0x80], [0x80], [0xe4, 0xb8]]) {
    const doc = new Uint8Array([
      ...enc.encode('{"name": "'),
      ...seq,
      ...enc.encode('", "kind": "a", "n": 1, "tags": ["q"], "nested": null}'),
    ]);
    assert.ok(!accepts(g, doc), `bytes ${seq}`);
  }
});

Deno.test("schema: recursive references generate finite, valid trees", () => {
  const { index, byte } = sharedVocab();
  const schema = {
    $ref: "#/$defs/node",
    $defs: {
      node: {
        type: "object",
        properties: { v: { type: "integer" }, kids: { type: "array", items: { $ref: "#/$defs/node" } } },
        required: ["v", "kids"],
        additionalProperties: false,
      },
    },
  };
  const g = compileJsonSchema(schema);
  assert.ok(accepts(g, '{"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]}'));
  const rand = prng(11);
  for (let i = 0; i < 20; i++) {
    const { text } = randomWalk(g, index, byte, rand, 80);
    assert.equal(validate(schema, JSON.parse(text)), null, text);
  }
});

Deno.test("schema: zodResponseFormat output is accepted as is, and generated values parse with the zod schema", () => {
  const { index, byte } = sharedVocab();
  const Item = z.object({ sku: z.string(), qty: z.number().int().min(1).max(99), price: z.number().min(0) });
  const Node: z.ZodType<{ name: string; children: unknown[] }> = z.lazy(() =>
    z.object({ name: z.string(), children: z.array(Node) })
  );
  const Order = z.object({
    id: z.number().int(),
    customer: z.string().describe("who ordered"),
    status: z.enum(["new", "paid", "shipped"]),
    kind: z.literal("order"),
    note: z.string().nullable(),
    items: z.array(Item),
    tags: z.array(z.string()).min(1).max(3),
    either: z.union([z.string(), z.number()]),
    tree: Node,
    flag: z.boolean().default(false),
  });
  const rf = zodResponseFormat(Order, "order");
  const schema = rf.json_schema.schema;
  const g = compileJsonSchema(schema, { strict: rf.json_schema.strict ?? true });
  const rand = prng(5);
  for (let i = 0; i < 30; i++) {
    const { text } = randomWalk(g, index, byte, rand, [10, 60, 200][i % 3]);
    const parsed = Order.safeParse(JSON.parse(text));
    assert.ok(parsed.success, `${text}\n${parsed.error}`);
    assert.equal(validate(schema, JSON.parse(text)), null);
  }
});

Deno.test("schema: json_object grammar takes any object and nothing else", () => {
  const g = jsonObjectGrammar();
  for (const t of ["{}", '{"a": [1, -2.5, true, null, {"b": "c"}], "": {}}', '{"é": "中"}']) {
    assert.ok(accepts(g, t), t);
  }
  for (const t of ["[]", '"s"', "1", "null", '{"a" 1}', "{,}", '{"a": 1,}', "{'a': 1}"]) {
    assert.ok(!accepts(g, t), t);
  }
});
