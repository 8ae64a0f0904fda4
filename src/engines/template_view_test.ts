// How conversations are shaped for a template: the probe finds which conventions a template works with
// (DeepSeek's splices arguments into text and tells call-only turns by null content; Qwen3's needs string
// content and serializes object arguments), and Phi-4-mini's template gets the tools on the system message.
import assert from "node:assert/strict";
import { Template } from "@huggingface/jinja";
import { templateConventions, templateMessage, toolsOnSystemMessage } from "./template_view.ts";

const render = (src: string) => (vars: Record<string, unknown>) => new Template(src).render(vars);

const DEEPSEEK_LIKE =
  "{% for m in messages %}{% if m['role'] == 'assistant' and m['content'] is none %}{% for t in m['tool_calls'] %}" +
  "{{ t['function']['name'] + '\\n```json\\n' + t['function']['arguments'] + '\\n```' }}{% endfor %}" +
  "{% else %}{{ m['content'] }}{% endif %}{% endfor %}";
const QWEN_LIKE = "{% for m in messages %}{% if '</think>' in m.content %}x{% endif %}{{ m.content }}" +
  "{% for t in m.tool_calls or [] %}{{ t.function.arguments | tojson }}{% endfor %}{% endfor %}";

Deno.test("templateConventions: string arguments and null content where the template needs them", () => {
  assert.deepEqual(templateConventions(render(DEEPSEEK_LIKE)), { stringArguments: true, nullContent: true });
  assert.deepEqual(templateConventions(render(QWEN_LIKE)), { stringArguments: false, nullContent: false });
});

Deno.test("templateMessage follows the conventions", () => {
  const m = {
    role: "assistant" as const,
    content: null,
    toolCalls: [{ id: "call00001", name: "f", arguments: '{"a": 1}' }],
  };
  const ds = templateMessage(m, { stringArguments: true, nullContent: true });
  assert.equal(ds.content, null);
  assert.deepEqual(
    (ds.tool_calls as { function: { arguments: unknown } }[])[0].function.arguments,
    '{"a": 1}',
  );
  const qw = templateMessage(m);
  assert.equal(qw.content, "");
  assert.deepEqual((qw.tool_calls as { function: { arguments: unknown } }[])[0].function.arguments, { a: 1 });
  // Rendered through each template, the call comes out.
  assert.match(render(DEEPSEEK_LIKE)({ messages: [ds] }), /f\n```json\n\{"a": 1\}\n```/);
});

Deno.test("toolsOnSystemMessage: only for templates that read message['tools']", () => {
  const tools = [{ type: "function", function: { name: "f", parameters: {} } }];
  const msgs = [{ role: "user", content: "Hi" }];
  assert.equal(toolsOnSystemMessage("{{ tools }}", msgs, tools), msgs);
  const phi = "{% if 'tools' in message and message['tools'] %}{{ message['tools'] }}{% endif %}";
  const out = toolsOnSystemMessage(phi, msgs, tools);
  assert.deepEqual(out[0], { role: "system", content: "", tools: '[{"name":"f","parameters":{}}]' });
  const withSystem = toolsOnSystemMessage(phi, [{ role: "system", content: "S" }, ...msgs], tools);
  assert.equal(withSystem.length, 2);
  assert.equal(withSystem[0].tools, '[{"name":"f","parameters":{}}]');
});
