// Owns how a conversation looks to a model's Jinja chat template: the message and tool objects every backend
// hands it (HF's conventions: tool-call arguments as objects, tools as OpenAI function specs). One shape for
// transformers.js and llama.cpp, so a GGUF and an ONNX export of one model render the same prompt.
import type { ChatMessage, ChatTool } from "./types.ts";

// Two conventions follow llama.cpp's server, each found by rendering a probe conversation once per template
// (`templateConventions`): an assistant turn made only of tool calls has content null where the template
// takes null (DeepSeek's tells such turns by `content is none`; Qwen3's needs a string), and templates that
// splice the arguments into text (DeepSeek's `'```json\n' + arguments`) get them as the JSON text.

export interface TemplateConventions {
  /** Tool-call arguments as JSON text rather than objects. */
  stringArguments: boolean;
  /** A tool-call-only assistant turn has content null (else ""). */
  nullContent: boolean;
}

const OBJECT_ARGS: TemplateConventions = { stringArguments: false, nullContent: false };

export function templateMessage(
  m: ChatMessage,
  conv: TemplateConventions = OBJECT_ARGS,
): Record<string, unknown> {
  const calls = m.toolCalls?.length ? m.toolCalls : null;
  const out: Record<string, unknown> = { role: m.role, content: m.content ?? "" };
  if (calls && !m.content && conv.nullContent) out.content = null;
  const stringArguments = conv.stringArguments;
  if (m.name !== undefined) out.name = m.name;
  if (calls) {
    out.tool_calls = calls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: stringArguments ? c.arguments : parseArguments(c.arguments) },
    }));
  }
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  return out;
}

function parseArguments(text: string): unknown {
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === "object" ? v : text;
  } catch {
    return text;
  }
}

export function templateTool(t: ChatTool): Record<string, unknown> {
  return {
    type: "function",
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.parameters ?? { type: "object", properties: {} },
    },
  };
}

/** How a template wants tool-call turns: rendered with probe turns, the conventions it works with. */
export function templateConventions(render: (vars: Record<string, unknown>) => string): TemplateConventions {
  const probe = (args: unknown, content: unknown) => {
    const messages = [
      { role: "user", content: "x" },
      {
        role: "assistant",
        content,
        // Nine letters and digits: Mistral's templates refuse any other id.
        tool_calls: [{ id: "probe0001", type: "function", function: { name: "probe_fn", arguments: args } }],
      },
    ];
    try {
      return render({ messages, add_generation_prompt: false, tools: null });
    } catch {
      return null;
    }
  };
  const nullContent = probe({ probe_key: "probe_value" }, null) !== null ||
    probe('{"probe_key": "probe_value"}', null) !== null;
  const out = probe({ probe_key: "probe_value" }, nullContent ? null : "");
  const stringArguments = out === null || out.includes("[object Object]") || !out.includes("probe_value");
  return { stringArguments, nullContent };
}

/**
 * Templates that read the tools from the system message (`message['tools']`, Phi-4-mini's) get them there as
 * JSON text, on a system message made for them when the conversation has none.
 */
export function toolsOnSystemMessage(
  template: string,
  messages: Record<string, unknown>[],
  tools: Record<string, unknown>[] | null,
): Record<string, unknown>[] {
  if (!tools?.length || !/message\[['"]tools['"]\]|message\.tools\b/.test(template)) return messages;
  const json = JSON.stringify(tools.map((t) => t.function ?? t));
  const [first, ...rest] = messages;
  if (first?.role === "system") return [{ ...first, tools: json }, ...rest];
  return [{ role: "system", content: "", tools: json }, ...messages];
}
