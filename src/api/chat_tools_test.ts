// Tests what the tool fields mean for a generation: tools offered to the template, parsing and call limits
// per tool_choice (and the deprecated functions), forced-call grammars in the model's format (the pipeline's
// grammar.ts on the plan made here), and the 400s for parameters that can't be compiled, naming the tool.
import assert from "node:assert/strict";
import { HERMES, MISTRAL } from "../chat/tools/mod.ts";
import { maskHas, VocabIndex } from "../chat/constrain/mod.ts";
import { ApiError, toApiError } from "../http/errors.ts";
import { checkTools, forcedCallGrammar } from "../chat/grammar.ts";
import { ChatCompletionRequest } from "../protocol/chat.ts";
import { parseRequest } from "../protocol/validate.ts";
import { planTools } from "./chat_tools.ts";

/** The plan, its declared tools checked as the pipeline checks every job. */
const checkedPlan = (b: Parameters<typeof planTools>[0]) => {
  const plan = planTools(b);
  checkTools(plan.declared);
  return plan;
};

const A = { type: "function", function: { name: "a", parameters: { type: "object", properties: {} } } };
const B = {
  type: "function",
  function: {
    name: "b",
    description: "bee",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
    strict: true,
  },
};

function body(extra: Record<string, unknown>) {
  return parseRequest(ChatCompletionRequest, {
    model: "m",
    messages: [{ role: "user", content: "x" }],
    ...extra,
  });
}

function badRequest(f: () => unknown): ApiError {
  try {
    f();
  } catch (err) {
    const e = toApiError(err);
    assert.equal(e.status, 400, String(err));
    return e;
  }
  throw new Error("no error");
}

Deno.test("planTools: each tool_choice", () => {
  const none = planTools(body({}));
  assert.deepEqual(none, {
    declared: [],
    offered: undefined,
    parse: false,
    maxCalls: 0,
    forced: null,
    legacy: false,
    param: "tools",
  });

  const auto = planTools(body({ tools: [A, B] }));
  assert.deepEqual(auto.offered?.map((t) => t.name), ["a", "b"]);
  assert.equal(auto.offered?.[1].description, "bee");
  assert.equal(auto.offered?.[1].strict, true);
  assert.equal(auto.parse, true);
  assert.equal(auto.maxCalls, Infinity);
  assert.equal(auto.forced, null);

  assert.equal(planTools(body({ tools: [A], parallel_tool_calls: false })).maxCalls, 1);

  const off = planTools(body({ tools: [A], tool_choice: "none" }));
  assert.equal(off.offered, undefined);
  assert.equal(off.parse, true);
  assert.equal(off.maxCalls, 0);

  const required = planTools(body({ tools: [A, B], tool_choice: "required" }));
  assert.deepEqual(required.forced?.tools.map((t) => t.tool.name), ["a", "b"]);
  assert.equal(required.forced?.parallel, true);

  const named = planTools(
    body({ tools: [A, B], tool_choice: { type: "function", function: { name: "b" } } }),
  );
  assert.deepEqual(named.forced?.tools.map((t) => t.tool.name), ["b"]);
  assert.equal(named.forced?.parallel, false);
  assert.equal(named.maxCalls, 1);
  assert.deepEqual(named.offered?.map((t) => t.name), ["a", "b"]);

  const allowed = planTools(body({
    tools: [A, B],
    tool_choice: {
      type: "allowed_tools",
      allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "b" } }] },
    },
  }));
  assert.deepEqual(allowed.offered?.map((t) => t.name), ["b"]);
  assert.equal(allowed.forced, null);
});

Deno.test("planTools: deprecated functions are one call at most", () => {
  const auto = planTools(body({ functions: [A.function, B.function] }));
  assert.equal(auto.legacy, true);
  assert.equal(auto.maxCalls, 1);
  assert.equal(auto.forced, null);
  const named = planTools(body({ functions: [A.function, B.function], function_call: { name: "a" } }));
  assert.deepEqual(named.forced, {
    tools: [{ tool: { name: "a", parameters: A.function.parameters }, param: "functions[0].parameters" }],
    parallel: false,
  });
  const none = planTools(body({ functions: [A.function], function_call: "none" }));
  assert.equal(none.offered, undefined);
  assert.equal(none.maxCalls, 0);
});

Deno.test("planTools: parameters must be an object schema; strict ones must compile strictly", () => {
  let e = badRequest(() =>
    checkedPlan(
      body({ tools: [A, { type: "function", function: { name: "s", parameters: { type: "array" } } }] }),
    )
  );
  assert.equal(e.param, "tools[1].function.parameters");
  e = badRequest(() =>
    checkedPlan(body({
      tools: [{
        type: "function",
        function: {
          name: "s",
          strict: true,
          parameters: { type: "object", properties: { a: { minLength: 1 } } },
        },
      }],
    }))
  );
  assert.equal(e.param, "tools[0].function.parameters");
  assert.match(e.message, /'minLength' at #\/properties\/a/);
  e = badRequest(() => checkedPlan(body({ functions: [{ name: "f", parameters: { type: "string" } }] })));
  assert.equal(e.param, "functions[0].parameters");
  // Not strict: unsupported keywords are fine (ignored when the call is forced).
  checkedPlan(body({
    tools: [{ type: "function", function: { name: "s", parameters: { type: "object", not: {} } } }],
  }));
});

Deno.test("forcedCallGrammar: the model's layout; a bad schema is a 400 naming its tool", () => {
  const ix = VocabIndex.build(
    [...'<>_abcdefghijklmnopqrstuvwxyz{}[]":, \n0123456789TOLCS'].map((c) => new TextEncoder().encode(c)),
    [],
  );
  const b = body({ tools: [A, B], tool_choice: "required" });
  const hermes = forcedCallGrammar(planTools(b), HERMES).matcher(ix);
  assert.ok(
    hermes.acceptBytes(new TextEncoder().encode('<tool_call>\n{"name": "b", "arguments": {"n": 1}}')),
  );
  const mistral = forcedCallGrammar(planTools(b), MISTRAL).matcher(ix);
  assert.ok(mistral.acceptBytes(new TextEncoder().encode('[TOOL_CALLS] [{"name": "a"')));
  assert.ok(maskHas(mistral.mask(), ix.tokens.findIndex((t) => t?.[0] === 0x2c)));

  const bad = body({
    tools: [A, {
      type: "function",
      function: { name: "c", parameters: { type: "object", properties: { x: { type: "nope" } } } },
    }],
    tool_choice: "required",
  });
  const e = badRequest(() => forcedCallGrammar(planTools(bad), HERMES));
  assert.equal(e.param, "tools[1].function.parameters");
  assert.match(e.message, /function 'c'/);
  const legacy = body({
    functions: [{ name: "f", parameters: { $ref: "#/nowhere" } }],
    function_call: { name: "f" },
  });
  assert.equal(
    badRequest(() => forcedCallGrammar(planTools(legacy), HERMES)).param,
    "functions[0].parameters",
  );
});
