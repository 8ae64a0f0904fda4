// Tests the chat request schema through parseRequest: OpenAI's ranges with the right `param`, role-specific
// required fields, text-only content parts, and tolerance of the extra fields SDKs send.
import assert from "node:assert/strict";
import { ApiError } from "../http/errors.ts";
import { ChatCompletionRequest } from "./chat.ts";
import { parseRequest } from "./validate.ts";

const hi = [{ role: "user", content: "hi" }];

function fails(body: Record<string, unknown>): ApiError {
  try {
    parseRequest(ChatCompletionRequest, { model: "m", ...body });
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 400);
    return e;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

Deno.test("a minimal request and the SDKs' extra fields pass", () => {
  const r = parseRequest(ChatCompletionRequest, {
    model: "m",
    messages: hi,
    metadata: { k: "v" },
    store: true,
    service_tier: "auto",
    modalities: ["text"],
    stream_options: { include_usage: true, include_obfuscation: false },
    temperature: null,
    stop: null,
  });
  assert.equal(r.messages.length, 1);
  assert.equal(r.stream_options?.include_usage, true);
});

Deno.test("ranges name the parameter", () => {
  const cases: [Record<string, unknown>, string, string][] = [
    [{ messages: hi, temperature: 2.5 }, "temperature", "decimal_above_max_value"],
    [{ messages: hi, temperature: -1 }, "temperature", "decimal_below_min_value"],
    [{ messages: hi, top_p: 2 }, "top_p", "decimal_above_max_value"],
    [{ messages: hi, n: 0 }, "n", "decimal_below_min_value"],
    [{ messages: hi, n: 129 }, "n", "decimal_above_max_value"],
    [{ messages: hi, n: 1.5 }, "n", "invalid_type"],
    [{ messages: hi, stop: ["a", "b", "c", "d", "e"] }, "stop", "array_above_max_length"],
    [{ messages: hi, presence_penalty: 2.1 }, "presence_penalty", "decimal_above_max_value"],
    [{ messages: hi, frequency_penalty: -3 }, "frequency_penalty", "decimal_below_min_value"],
    [{ messages: hi, top_logprobs: 21, logprobs: true }, "top_logprobs", "decimal_above_max_value"],
    [{ messages: hi, max_tokens: 0 }, "max_tokens", "decimal_below_min_value"],
    [{ messages: hi, seed: 1.5 }, "seed", "invalid_value"],
    [{ messages: hi, logit_bias: { "1": -101 } }, "logit_bias.1", "decimal_below_min_value"],
  ];
  for (const [body, param, code] of cases) {
    const e = fails(body);
    assert.equal(e.param, param, JSON.stringify(body));
    assert.equal(e.code, code, JSON.stringify(body));
  }
});

Deno.test("messages: roles, required fields per role, content parts", () => {
  assert.equal(fails({ messages: [] }).param, "messages");
  assert.equal(fails({}).code, "missing_required_parameter");
  const role = fails({ messages: [{ role: "robot", content: "x" }] });
  assert.equal(role.param, "messages[0].role");
  assert.equal(role.code, "invalid_value");
  assert.equal(fails({ messages: [{ role: "user" }] }).param, "messages[0].content");
  assert.equal(fails({ messages: [{ role: "system", content: null }] }).param, "messages[0].content");
  assert.equal(fails({ messages: [{ role: "tool", content: "r" }] }).param, "messages[0].tool_call_id");
  assert.equal(fails({ messages: [{ role: "function", content: "r" }] }).param, "messages[0].name");
  const image = fails({
    messages: [...hi, {
      role: "user",
      content: [{ type: "text", text: "a" }, { type: "image_url", image_url: {} }],
    }],
  });
  assert.equal(image.param, "messages[1].content[1].type");
  assert.match(image.message, /image_url/);
  assert.equal(
    fails({ messages: [{ role: "user", content: [{ type: "text" }] }] }).param,
    "messages[0].content[0].text",
  );
  // An assistant turn may be only tool calls; a tool result needs its call id.
  const ok = parseRequest(ChatCompletionRequest, {
    model: "m",
    messages: [
      ...hi,
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "42" }] },
      { role: "developer", content: "be brief", name: "ops" },
    ],
  });
  assert.equal(ok.messages.length, 4);
  assert.equal(fails({ messages: [{ role: "assistant" }] }).param, "messages[0].content");
});

Deno.test("top_logprobs needs logprobs; logit_bias keys are token ids", () => {
  assert.equal(fails({ messages: hi, top_logprobs: 2 }).param, "top_logprobs");
  assert.equal(fails({ messages: hi, top_logprobs: 2, logprobs: false }).param, "top_logprobs");
  parseRequest(ChatCompletionRequest, { model: "m", messages: hi, top_logprobs: 2, logprobs: true });
  assert.equal(fails({ messages: hi, logit_bias: { x: 1 } }).param, "logit_bias");
  parseRequest(ChatCompletionRequest, { model: "m", messages: hi, logit_bias: { "50256": -100 } });
});

Deno.test("tools: function tools with a valid name", () => {
  const tool = (name: string) => ({ type: "function", function: { name, parameters: { type: "object" } } });
  parseRequest(ChatCompletionRequest, { model: "m", messages: hi, tools: [tool("get_weather")] });
  assert.equal(fails({ messages: hi, tools: [tool("bad name!")] }).param, "tools[0].function.name");
});
