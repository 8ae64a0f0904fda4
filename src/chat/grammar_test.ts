// Tests response_format -> grammar: no format is no constraint, json_object any object, json_schema the
// schema (strict or not), and every schema the compiler refuses is InvalidRequest (a 400) naming
// response_format.json_schema.schema.
import assert from "node:assert/strict";
import { VocabIndex } from "./constrain/mod.ts";
import { InvalidRequest } from "../errors.ts";
import { memoryLogger } from "../log.ts";
import { responseGrammar } from "./grammar.ts";

const enc = new TextEncoder();
const ix = VocabIndex.build(
  [...'{}[]":, abcdefghijklmnopqrstuvwxyz0123456789.-'].map((c) => enc.encode(c)),
  [],
);

function accepts(g: ReturnType<typeof responseGrammar>, text: string): boolean {
  const m = g!.matcher(ix);
  return m.acceptBytes(enc.encode(text)) && m.isComplete();
}

const js = (schema: unknown, strict?: boolean) => ({
  type: "json_schema" as const,
  name: "x",
  schema: schema as Record<string, unknown>,
  strict: strict === true,
});

Deno.test("responseGrammar: text, json_object, json_schema", () => {
  assert.equal(responseGrammar(undefined), null);
  assert.equal(responseGrammar(null), null);
  const obj = responseGrammar({ type: "json_object" });
  assert.ok(accepts(obj, '{"a": [1, "x"]}'));
  assert.equal(accepts(obj, "[1]"), false);
  const schema = {
    type: "object",
    properties: { n: { type: "integer" } },
    required: ["n"],
    additionalProperties: false,
  };
  const g = responseGrammar(js(schema, true));
  assert.ok(accepts(g, '{"n": 12}'));
  assert.equal(accepts(g, '{"n": "x"}'), false);
});

Deno.test("responseGrammar: strict refuses unsupported keywords, non-strict ignores and logs them", () => {
  const schema = { type: "object", properties: { s: { type: "string", format: "date" } } };
  let err: unknown;
  try {
    responseGrammar(js(schema, true));
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof InvalidRequest);
  assert.equal(err.param, "response_format.json_schema.schema");
  assert.match(err.message, /'format' at #\/properties\/s/);
  const log = memoryLogger();
  assert.ok(responseGrammar(js(schema), log));
  assert.ok(log.lines.some((l) => l.includes("format at #/properties/s")), log.lines.join("\n"));
});

Deno.test("responseGrammar: malformed or unsatisfiable schemas are 400s", () => {
  for (
    const schema of [
      { type: 1 },
      { $ref: "#/x" },
      { enum: [] },
      { type: "integer", minimum: 2, maximum: 1 },
      {
        type: "array",
        maxItems: "3",
      },
    ]
  ) {
    try {
      responseGrammar(js(schema));
      assert.fail(`accepted ${JSON.stringify(schema)}`);
    } catch (e) {
      assert.ok(e instanceof InvalidRequest, `${JSON.stringify(schema)}: ${e}`);
      assert.equal(e.param, "response_format.json_schema.schema");
      assert.equal(e.code, "invalid_json_schema");
    }
  }
});
