// Owns how a conversation looks to a model's Jinja chat template: the message and tool objects every backend
// hands it (HF's conventions: tool-call arguments as objects, tools as OpenAI function specs). One shape for
// transformers.js and llama.cpp, so a GGUF and an ONNX export of one model render the same prompt.
import type { ChatMessage, ChatTool } from "./types.ts";

export function templateMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: m.content ?? "" };
  if (m.name !== undefined) out.name = m.name;
  if (m.toolCalls?.length) {
    out.tool_calls = m.toolCalls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: parseArguments(c.arguments) },
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
