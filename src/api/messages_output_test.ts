// Unit tests of a Messages reply's content blocks and stream events from the pipeline's deltas.
import assert from "node:assert/strict";
import { MessageContent } from "./messages_output.ts";

Deno.test("messages output: thinking, text and tool calls become indexed blocks and their events", () => {
  const c = new MessageContent();
  const evs = [
    ...c.push({ reasoning: "Hmm." }),
    ...c.push({ content: "Sure." }),
    ...c.push({ toolCalls: [{ index: 0, id: "call_1", name: "t", arguments: '{"a":' }] }),
    ...c.push({ toolCalls: [{ index: 0, arguments: "1}" }] }),
    ...c.end(),
  ];
  assert.deepEqual(evs.map((e) => [e.type, e.index, (e.delta as { type?: string } | undefined)?.type]), [
    ["content_block_start", 0, undefined],
    ["content_block_delta", 0, "thinking_delta"],
    ["content_block_delta", 0, "signature_delta"],
    ["content_block_stop", 0, undefined],
    ["content_block_start", 1, undefined],
    ["content_block_delta", 1, "text_delta"],
    ["content_block_stop", 1, undefined],
    ["content_block_start", 2, undefined],
    ["content_block_delta", 2, "input_json_delta"],
    ["content_block_delta", 2, "input_json_delta"],
    ["content_block_stop", 2, undefined],
  ]);
  const [thinking, text, use] = c.blocks;
  assert.equal(thinking.thinking, "Hmm.");
  assert.ok(String(thinking.signature).length > 20);
  assert.deepEqual(text, { type: "text", text: "Sure." });
  assert.equal(use.type, "tool_use");
  assert.match(String(use.id), /^toolu_01/);
  assert.deepEqual(use.input, { a: 1 });
});

Deno.test("messages output: whitespace before a call is dropped; a whitespace-only reply is text", () => {
  const c = new MessageContent();
  c.push({ content: "\n" });
  c.push({ toolCalls: [{ index: 0, name: "t", arguments: "{}" }] });
  c.end();
  assert.deepEqual(c.blocks.map((b) => b.type), ["tool_use"]);
  const ws = new MessageContent();
  ws.push({ content: " " });
  ws.end();
  assert.deepEqual(ws.blocks, [{ type: "text", text: " " }]);
});

Deno.test("messages output: omitted thinking keeps the signature, sends no thinking text", () => {
  const c = new MessageContent({ omitThinking: true });
  const evs = [...c.push({ reasoning: "secret" }), ...c.push({ content: "ok" }), ...c.end()];
  assert.ok(!JSON.stringify(evs).includes("secret"));
  assert.equal(c.blocks[0].thinking, "");
  assert.ok(String(c.blocks[0].signature).length > 20);
});
