import assert from "node:assert/strict";
import { detectToolFormat, HERMES, LLAMA3, MISTRAL } from "./formats.ts";

Deno.test("formats: the template family is read off the chat template", () => {
  assert.equal(detectToolFormat('... <tool_call>\\n{"name": <function-name>, ...} ...'), HERMES);
  assert.equal(detectToolFormat("{{ '[TOOL_CALLS]' + tool_calls|tojson }}"), MISTRAL);
  assert.equal(detectToolFormat("{{- '<|python_tag|>' }} ... <|eot_id|>"), LLAMA3);
  assert.equal(detectToolFormat(undefined), HERMES);
  // Each layout's markup is what its grammar writes and its parser looks for.
  assert.equal(HERMES.open.trim(), "<tool_call>");
  assert.equal(HERMES.close.trim(), "</tool_call>");
  assert.ok(MISTRAL.prefix.startsWith("[TOOL_CALLS]"));
  assert.equal(LLAMA3.argsKey, "parameters");
});
