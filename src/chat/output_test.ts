// Tests the per-choice output parser: content passes through, calls beyond the limit are dropped whole
// (markup never shown), and the finish reason: tool_calls when a call was kept, length when the constraint
// closed the output early.
import assert from "node:assert/strict";
import { ChoiceOutput } from "./output.ts";
import { ToolOutputParser } from "./tools/mod.ts";
import type { ChatDelta } from "../engines/types.ts";

const CALL = (city: string) =>
  `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>`;

function feed(p: ChoiceOutput, text: string): ChatDelta[] {
  const out: ChatDelta[] = [];
  for (const ch of text) out.push(...p.push(ch));
  out.push(...p.end());
  return out;
}

let n = 0;
const ids = () => `call_${n++}`;

Deno.test("ChoiceOutput: content only", () => {
  const p = new ChoiceOutput(null, { maxCalls: 0 });
  assert.deepEqual(p.push("a"), [{ content: "a" }]);
  assert.deepEqual(p.push(""), []);
  assert.deepEqual(p.end(), []);
  assert.equal(p.finishReason, undefined);
});

Deno.test("ChoiceOutput: all calls, one call, none", () => {
  const text = `Sure. ${CALL("Paris")}\n${CALL("Rome")}`;
  const all = new ChoiceOutput(new ToolOutputParser(undefined, ids), { maxCalls: Infinity });
  const deltas = feed(all, text);
  const indexes = new Set(deltas.flatMap((d) => d.toolCalls ?? []).map((c) => c.index));
  assert.deepEqual([...indexes], [0, 1]);
  assert.equal(all.finishReason, "tool_calls");

  const one = new ChoiceOutput(new ToolOutputParser(undefined, ids), { maxCalls: 1 });
  const oneDeltas = feed(one, text);
  const calls = oneDeltas.flatMap((d) => d.toolCalls ?? []);
  assert.ok(calls.every((c) => c.index === 0));
  assert.equal(calls.map((c) => c.arguments ?? "").join(""), '{"city": "Paris"}');
  assert.equal(one.dropped, 1);
  assert.equal(one.finishReason, "tool_calls");

  const none = new ChoiceOutput(new ToolOutputParser(undefined, ids), { maxCalls: 0 });
  const noneDeltas = feed(none, text);
  assert.ok(noneDeltas.every((d) => !d.toolCalls));
  // Issue 30: a call written under tool_choice none comes back as text, never dropped.
  assert.equal(
    noneDeltas.map((d) => d.content ?? "").join(""),
    'Sure.{"name": "get_weather", "arguments": {"city": "Paris"}}\n{"name": "get_weather", "arguments": {"city": "Rome"}}',
  );
  assert.equal(none.finishReason, undefined);
});

Deno.test("ChoiceOutput: truncated by the constraint is length", () => {
  const p = new ChoiceOutput(new ToolOutputParser(undefined, ids), { maxCalls: 1, truncated: () => true });
  feed(p, CALL("Paris"));
  assert.equal(p.finishReason, "length");
});
