// Unit tests of reading a Messages request into native terms: the conversation (system blocks, the billing
// header left out, tool results as tool turns, system role messages in place, past thinking left out, a
// prefilled assistant turn refused), the tool plan from tool_choice, cache_control breakpoints.
import assert from "node:assert/strict";
import {
  conversationOf,
  hasCacheBreakpoints,
  systemText,
  thinkingSwitch,
  toolPlanOf,
} from "./messages_input.ts";
import { ApiError } from "../http/errors.ts";
import type { CountTokensRequest } from "../protocol/messages.ts";

const tool = { name: "t", input_schema: { type: "object" as const } };
const body = (b: Partial<CountTokensRequest>) => ({ model: "m", messages: [], ...b }) as CountTokensRequest;

Deno.test("messages input: system blocks joined, Claude Code's billing header left out", () => {
  assert.equal(systemText("Be terse."), "Be terse.");
  assert.equal(systemText(undefined), null);
  assert.equal(
    systemText([
      { type: "text", text: "x-anthropic-billing-header: cc_version=2.1.328.d15; cc_entrypoint=cli;" },
      { type: "text", text: "A" },
      { type: "text", text: "B" },
    ]),
    "A\n\nB",
  );
});

Deno.test("messages input: a tool round trip, system role messages and thinking blocks as chat turns", () => {
  const messages = conversationOf(body({
    system: "S",
    messages: [
      { role: "user", content: [{ type: "text", text: "q1" }, { type: "text", text: "q2" }] },
      { role: "system", content: "env" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "hmm", signature: "x" },
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "toolu_1", name: "t", input: { a: 1 } },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [{ type: "text", text: "r" }],
            is_error: true,
          },
          { type: "text", text: "and?" },
        ],
      },
    ],
  }));
  assert.deepEqual(messages, [
    { role: "system", content: "S" },
    // The system role message joins the user turn before it: templates that refuse a system turn past the
    // start, or turns that do not alternate (Gemma, Mistral), render it all the same.
    { role: "user", content: "q1\nq2\n\nenv" },
    {
      role: "assistant",
      content: "Let me look.",
      toolCalls: [{ id: "toolu_1", name: "t", arguments: '{"a":1}' }],
    },
    { role: "tool", content: "Error: r", toolCallId: "toolu_1" },
    { role: "user", content: "and?" },
  ]);
});

Deno.test("messages input: system role messages join the system prompt or the nearest user turn", () => {
  const conv = (messages: CountTokensRequest["messages"], system?: string) =>
    conversationOf(body({ messages, ...(system ? { system } : {}) }));
  // Before any other turn: part of the system prompt.
  assert.deepEqual(conv([{ role: "system", content: "B" }, { role: "user", content: "q" }], "A"), [
    { role: "system", content: "A\n\nB" },
    { role: "user", content: "q" },
  ]);
  // After an assistant turn: ahead of the next user turn.
  assert.deepEqual(
    conv([
      { role: "user", content: "q1" },
      { role: "assistant", content: "a1" },
      { role: "system", content: "S" },
      { role: "user", content: "q2" },
    ]),
    [
      { role: "user", content: "q1" },
      { role: "assistant", content: "a1" },
      { role: "user", content: "S\n\nq2" },
    ],
  );
});

Deno.test("messages input: a prefilled assistant turn and misplaced blocks are refused, naming them", () => {
  const refused = (b: Partial<CountTokensRequest>, param: string) =>
    assert.throws(() => conversationOf(body(b)), (e: unknown) => e instanceof ApiError && e.param === param);
  refused({ messages: [{ role: "user", content: "q" }, { role: "assistant", content: "{" }] }, "messages[1]");
  refused({
    messages: [{ role: "assistant", content: [{ type: "tool_result", tool_use_id: "x" }] }, {
      role: "user",
      content: "q",
    }],
  }, "messages[0].content[0].type");
  refused(
    { messages: [{ role: "user", content: [{ type: "tool_use", id: "x", name: "t", input: {} }] }] },
    "messages[0].content[0].type",
  );
});

Deno.test("messages input: tool_choice as chat's tool plan", () => {
  const plan = (tool_choice?: CountTokensRequest["tool_choice"]) =>
    toolPlanOf(body({ tools: [tool], tool_choice }));
  assert.equal(plan().forced, null);
  assert.equal(plan().maxCalls, Infinity);
  assert.deepEqual(plan({ type: "any" }).forced?.tools.map((d) => d.tool.name), ["t"]);
  assert.equal(plan({ type: "any", disable_parallel_tool_use: true }).maxCalls, 1);
  assert.equal(plan({ type: "tool", name: "t" }).forced?.parallel, false);
  assert.equal(plan({ type: "none" }).offered, undefined);
  assert.equal(plan().declared[0].param, "tools[0].input_schema");
  assert.throws(() => plan({ type: "tool", name: "u" }), /not found/);
  assert.throws(() => toolPlanOf(body({ tool_choice: { type: "any" } })), /at least one tool/);
});

Deno.test("messages input: thinking switch and cache breakpoints", () => {
  assert.deepEqual(thinkingSwitch({ type: "disabled" }), { thinking: false });
  assert.deepEqual(thinkingSwitch({ type: "enabled", budget_tokens: 2000 }), {});
  assert.deepEqual(thinkingSwitch(undefined), {});
  assert.equal(hasCacheBreakpoints(body({ messages: [{ role: "user", content: "q" }] })), false);
  assert.equal(
    hasCacheBreakpoints(
      body({ system: [{ type: "text", text: "s", cache_control: { type: "ephemeral" } }] }),
    ),
    true,
  );
  assert.equal(
    hasCacheBreakpoints(body({ tools: [{ ...tool, cache_control: { type: "ephemeral" } }] })),
    true,
  );
  assert.equal(
    hasCacheBreakpoints(body({
      messages: [{
        role: "user",
        content: [{ type: "text", text: "q", cache_control: { type: "ephemeral" } }],
      }],
    })),
    true,
  );
});
