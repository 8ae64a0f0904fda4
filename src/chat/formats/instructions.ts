// Owns telling a model about the tools when its chat template has no place for them (DeepSeek V3's and R1's
// original templates, Gemma 3's, templates that never mention `tools`): the tools and the family's own call
// syntax go into the system message, as llama.cpp's server does for such templates. A template that renders
// `tools` itself is never given this text.
import type { ChatMessage, ChatTool } from "../../engines/types.ts";
import type { Family } from "./family.ts";

/** Whether the template renders the tools it is given. */
export function templateRendersTools(template: string | null): boolean {
  return /\btools\b/.test(template ?? "");
}

function listing(tools: readonly ChatTool[]): string {
  return tools.map((t) =>
    JSON.stringify({
      type: "function",
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        parameters: t.parameters ?? { type: "object", properties: {} },
      },
    })
  ).join("\n");
}

/** The system text that offers `tools` in the family's syntax. */
export function toolInstructions(family: Family, tools: readonly ChatTool[]): string {
  const head = `You may call these tools:\n${listing(tools)}\n\n`;
  switch (family.name) {
    case "deepseek":
      return head +
        "To call tools, write <｜tool▁calls▁begin｜>, then for each call <｜tool▁call▁begin｜>function<｜tool▁sep｜>" +
        "NAME\n```json\nARGUMENTS\n```<｜tool▁call▁end｜>, then <｜tool▁calls▁end｜>.";
    case "llama3":
      // Llama 3.1's own wording for JSON tool calling.
      return head +
        "Given the functions above, respond with a JSON for a function call with its proper arguments that best " +
        'answers the given prompt. Respond in the format {"name": function name, "parameters": dictionary of ' +
        "argument name and its value}. Do not use variables.";
    case "hermes":
      return head +
        "For each function call, return a json object with function name and arguments within <tool_call></tool_call> " +
        'XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';
    case "mistral_v3":
      return head + 'To call tools, write [TOOL_CALLS][{"name": NAME, "arguments": ARGUMENTS}, ...].';
    case "gemma":
      return head +
        "To call a tool, write a Python call with keyword arguments in a ```tool_code``` block, for example:\n" +
        '```tool_code\nname(argument="value")\n```';
    default:
      return head +
        'To call tools, reply with only a JSON object: {"tool_calls": [{"name": NAME, "arguments": ARGUMENTS}]}.';
  }
}

/** The conversation with the tools described in its system message. */
export function withToolInstructions(
  messages: readonly ChatMessage[],
  family: Family,
  tools: readonly ChatTool[],
): ChatMessage[] {
  const text = toolInstructions(family, tools);
  const [first, ...rest] = messages;
  if (first?.role === "system") {
    return [{ ...first, content: `${first.content ?? ""}\n\n${text}`.trimStart() }, ...rest];
  }
  return [{ role: "system", content: text }, ...messages];
}

/**
 * For templates that never render `tool_calls` (they show an assistant turn's content only): earlier calls
 * written into that turn's content in the family's own syntax, so the model sees what it called.
 */
export function callsAsContent(
  messages: readonly ChatMessage[],
  family: Family,
  template: string | null,
): ChatMessage[] {
  if (!family.writeCalls || /\btool_calls\b/.test(template ?? "")) return [...messages];
  return messages.map((m) => {
    if (m.role !== "assistant" || !m.toolCalls?.length) return m;
    const { toolCalls, ...rest } = m;
    return { ...rest, content: `${m.content ?? ""}${family.writeCalls!(toolCalls)}` };
  });
}
