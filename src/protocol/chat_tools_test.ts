// Tests the tool and response-format fields of the chat request schema through parseRequest: accepted shapes
// (the SDK helpers' output included), and each rule's 400 with OpenAI's param path.
import assert from "node:assert/strict";
import { z } from "zod";
import { zodFunction, zodResponseFormat } from "openai/helpers/zod";
import { ApiError } from "../http/errors.ts";
import { ChatCompletionRequest } from "./chat.ts";
import { parseRequest } from "./validate.ts";

const hi = [{ role: "user", content: "hi" }];
const tool = (name: string) => ({ type: "function", function: { name, parameters: { type: "object" } } });

function parse(body: Record<string, unknown>) {
  return parseRequest(ChatCompletionRequest, { model: "m", messages: hi, ...body });
}

function fails(body: Record<string, unknown>): ApiError {
  try {
    parse(body);
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 400);
    return e;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

Deno.test("tool fields: accepted shapes", () => {
  const r = parse({
    tools: [tool("a"), zodFunction({ name: "b", parameters: z.object({ x: z.string() }) })],
    tool_choice: { type: "function", function: { name: "b" } },
    parallel_tool_calls: false,
  });
  assert.equal(r.tools?.length, 2);
  for (const choice of ["none", "auto", "required"]) parse({ tools: [tool("a")], tool_choice: choice });
  parse({
    tools: [tool("a"), tool("b")],
    tool_choice: {
      type: "allowed_tools",
      allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "a" } }] },
    },
  });
  parse({ functions: [{ name: "f" }], function_call: { name: "f" } });
  parse({ functions: [{ name: "f", parameters: { type: "object" } }], function_call: "none" });
  parse({ tools: [] });
});

Deno.test("response_format: accepted shapes, zodResponseFormat as is", () => {
  parse({ response_format: { type: "text" } });
  parse({ response_format: { type: "json_object" } });
  const rf = zodResponseFormat(z.object({ a: z.string(), b: z.array(z.number()).nullable() }), "my_schema");
  const r = parse({ response_format: rf });
  assert.equal(r.response_format?.type, "json_schema");
  parse({
    response_format: {
      type: "json_schema",
      json_schema: { name: "x", description: "d", schema: { type: "object" }, strict: null },
    },
  });
});

Deno.test("tool and response_format rules name the parameter", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ tools: [tool("has space")] }, "tools[0].function.name"],
    [{ tools: [tool("x".repeat(65))] }, "tools[0].function.name"],
    [
      { tools: [{ type: "function", function: { name: "a", parameters: [] } }] },
      "tools[0].function.parameters",
    ],
    [{ tools: [{ type: "web_search" }] }, "tools[0].type"],
    [{ tool_choice: "auto" }, "tool_choice"],
    [{ tools: [], tool_choice: "required" }, "tool_choice"],
    [{ tools: [tool("a")], tool_choice: "maybe" }, "tool_choice"],
    [{ tools: [tool("a")], tool_choice: { type: "function", function: { name: "b" } } }, "tool_choice"],
    [{ tools: [tool("a")], tool_choice: { type: "function" } }, "tool_choice"],
    [{ tools: [tool("a")], parallel_tool_calls: 1 }, "parallel_tool_calls"],
    [{ functions: [{ name: "f" }], tools: [tool("a")] }, "functions"],
    [{ functions: [] }, "functions"],
    [{ function_call: "auto" }, "function_call"],
    [{ functions: [{ name: "f" }], function_call: { name: "g" } }, "function_call"],
    [{ functions: [{ name: "f" }], function_call: "required" }, "function_call"],
    [{ response_format: { type: "json_schema" } }, "response_format.json_schema"],
    [{ response_format: { type: "json_schema", schema: {} } }, "response_format.json_schema"],
    [
      { response_format: { type: "json_schema", json_schema: { name: "x" } } },
      "response_format.json_schema.schema",
    ],
    [
      { response_format: { type: "json_schema", json_schema: { name: "x", schema: true } } },
      "response_format.json_schema.schema",
    ],
    [
      { response_format: { type: "json_schema", json_schema: { name: "no way", schema: {} } } },
      "response_format.json_schema.name",
    ],
    [
      { response_format: { type: "json_schema", json_schema: { schema: {} } } },
      "response_format.json_schema.name",
    ],
    [
      { response_format: { type: "json_schema", json_schema: { name: "x", schema: {}, strict: "yes" } } },
      "response_format.json_schema.strict",
    ],
    [{ response_format: { type: "grammar" } }, "response_format.type"],
    [{ response_format: "json_object" }, "response_format"],
  ];
  for (const [body, param] of cases) {
    const e = fails(body);
    assert.equal(e.param, param, `${JSON.stringify(body)}: ${e.message}`);
  }
});
