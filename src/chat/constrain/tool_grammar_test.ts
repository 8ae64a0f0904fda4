import assert from "node:assert/strict";
import { HERMES, LLAMA3, MISTRAL } from "../tools/formats.ts";
import { parseToolCalls } from "../tools/tool_parser.ts";
import { maskHas } from "./matcher.ts";
import { SchemaError } from "./schema.ts";
import { prng } from "../../../tests/support/synthetic_vocab.ts";
import { randomSchema, randomWalk, sharedVocab, validate } from "../../../tests/support/constrain_support.ts";
import { toolCallGrammar, type ToolSpec } from "./tool_grammar.ts";

const TOOLS: ToolSpec[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
  // Names sharing a prefix keep the alternatives open for a while.
  {
    name: "get_time",
    parameters: { type: "object", properties: { tz: { type: ["string", "null"] } }, required: ["tz"] },
  },
  { name: "get", parameters: { type: "object", properties: {}, additionalProperties: false } },
  { name: "noop" },
];

Deno.test("tool grammar: forced calls parse into offered names with schema-valid arguments", () => {
  const { index, byte } = sharedVocab();
  const rand = prng(31);
  for (const parallel of [false, true]) {
    const g = toolCallGrammar(TOOLS, { parallel, maxCalls: 3 });
    for (let i = 0; i < 40; i++) {
      const { text } = randomWalk(g, index, byte, rand, [5, 40, 120][i % 3]);
      assert.ok(text.startsWith("<tool_call>\n{") && text.endsWith("}\n</tool_call>"), text);
      const r = parseToolCalls(text, HERMES);
      assert.equal(r.content, "", text);
      assert.ok(r.calls.length >= 1 && r.calls.length <= (parallel ? 3 : 1), text);
      for (const c of r.calls) {
        const tool = TOOLS.find((t) => t.name === c.name);
        assert.ok(tool, `offered name: ${text}`);
        const args = JSON.parse(c.arguments);
        const schema = tool.parameters ?? { type: "object", additionalProperties: false };
        assert.equal(validate(schema, args), null, text);
      }
    }
  }
});

Deno.test("tool grammar: a named function (one tool) only ever calls it; random parameter schemas hold", () => {
  const { index, byte } = sharedVocab();
  const rand = prng(8);
  for (let i = 0; i < 40; i++) {
    const parameters = randomSchema(rand);
    const g = toolCallGrammar([{ name: "only_me", parameters, strict: true }]);
    const { text } = randomWalk(g, index, byte, rand, 50);
    const r = parseToolCalls(text);
    assert.equal(r.calls.length, 1);
    assert.equal(r.calls[0].name, "only_me");
    assert.equal(validate(parameters, JSON.parse(r.calls[0].arguments)), null, text);
  }
});

Deno.test("tool grammar: Mistral and Llama 3 layouts round-trip through their parsers", () => {
  const { index, byte } = sharedVocab();
  const rand = prng(4);
  for (const format of [MISTRAL, LLAMA3]) {
    const g = toolCallGrammar(TOOLS, { parallel: true, maxCalls: 2, format });
    for (let i = 0; i < 20; i++) {
      const { text } = randomWalk(g, index, byte, rand, 40);
      const r = parseToolCalls(text, format);
      assert.ok(r.calls.length >= 1 && r.calls.length <= (format.parallel ? 2 : 1), text);
      for (const c of r.calls) assert.ok(TOOLS.some((t) => t.name === c.name), text);
      if (format === LLAMA3) assert.match(text, /^\{\s?"name":/);
      else assert.ok(text.startsWith("[TOOL_CALLS] [{"), text);
    }
  }
});

Deno.test("tool grammar: the <tool_call> token itself is allowed first, nothing else but its spelling", () => {
  const { index, vocab } = sharedVocab();
  const m = toolCallGrammar(TOOLS).matcher(index);
  const mask = m.mask();
  assert.ok(maskHas(mask, vocab.byText.get("<tool_call>")!));
  assert.ok(maskHas(mask, vocab.byText.get("<")!));
  assert.ok(!maskHas(mask, vocab.byText.get("{")!));
  assert.ok(!maskHas(mask, vocab.byText.get(" ")!));
});

Deno.test("tool grammar: strict tools name their unsupported keyword and the tool; non-strict ones do not", () => {
  const bad: ToolSpec = {
    name: "send",
    parameters: { type: "object", properties: { to: { type: "string", format: "email" } }, required: ["to"] },
  };
  try {
    toolCallGrammar([TOOLS[0], { ...bad, strict: true }]);
    assert.fail("compiled");
  } catch (e) {
    assert.ok(e instanceof SchemaError);
    assert.equal(e.keyword, "format");
    assert.equal(e.path, "#/properties/to");
    assert.equal(e.tool, 1);
  }
  const g = toolCallGrammar([bad]);
  assert.deepEqual(g.ignored, [{ keyword: "format", path: "#/properties/to" }]);
  assert.throws(() => toolCallGrammar([]), SchemaError);
  const unsat = {
    name: "x",
    parameters: { type: "object", properties: { a: { enum: [] } }, required: ["a"] },
  };
  assert.throws(
    () => toolCallGrammar([TOOLS[0], unsat]),
    (e: unknown) => e instanceof SchemaError && e.tool === 1,
  );
});

Deno.test("tool grammar: with a document alternative, every walk is calls or a schema-valid document", () => {
  const { index, byte } = sharedVocab();
  const rand = prng(47);
  const schema = {
    type: "object",
    properties: { answer: { enum: ["yes", "no"] }, n: { type: "integer" } },
    required: ["answer", "n"],
    additionalProperties: false,
  };
  const g = toolCallGrammar(TOOLS, { parallel: true, maxCalls: 2 }, { schema, strict: true });
  const seen = { calls: 0, documents: 0 };
  for (let i = 0; i < 60; i++) {
    const { text } = randomWalk(g, index, byte, rand, [5, 40, 120][i % 3]);
    if (text.startsWith("<tool_call>")) {
      seen.calls++;
      const r = parseToolCalls(text, HERMES);
      assert.equal(r.content, "", text);
      assert.ok(r.calls.length >= 1 && r.calls.length <= 2, text);
    } else {
      seen.documents++;
      assert.equal(validate(schema, JSON.parse(text)), null, text);
    }
  }
  assert.ok(seen.calls > 0 && seen.documents > 0, JSON.stringify(seen));
  const any = toolCallGrammar(TOOLS, {}, { schema: true });
  assert.ok(any.matcher(index).acceptBytes(new TextEncoder().encode('{"free": [1, 2]}')));
});
