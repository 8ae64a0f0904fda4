// Owns reading Responses input into native terms: `input` (a string or items) normalized into the items the
// store keeps and input_items lists (each with an id, string content as an `input_text` part), those items
// (and earlier turns' output items) as chat messages, and the function tools + tool_choice as chat's tool
// plan (so tools render, parse and are forced exactly as in chat completions). Unknown names in tool_choice
// are refused by the wire schema.
import type { ChatMessage, ChatToolCall } from "../engines/types.ts";
import type { ChatCompletionRequest } from "../protocol/chat.ts";
import type { CreateResponseRequest, ResponseToolChoice } from "../protocol/responses.ts";
import { randomId } from "../ids.ts";
import { planTools, type ToolPlan } from "./chat_tools.ts";

type Item = Record<string, unknown>;

const ID_PREFIX: Record<string, string> = {
  message: "msg_",
  function_call: "fc_",
  function_call_output: "fco_",
  reasoning: "rs_",
};

/** The request's input as stored items: ids given or made, string content as one text part. */
export function normalizeInput(input: string | Item[] | undefined): Item[] {
  if (input === undefined) return [];
  const items = typeof input === "string" ? [{ role: "user", content: input }] : input;
  return items.map((raw) => {
    const type = (raw.type as string | undefined) ?? "message";
    const item: Item = { ...raw, type, id: (raw.id as string | undefined) ?? randomId(ID_PREFIX[type], 24) };
    if (type === "message") {
      const partType = raw.role === "assistant" ? "output_text" : "input_text";
      if (typeof raw.content === "string") item.content = [{ type: partType, text: raw.content }];
      item.status ??= "completed";
    }
    return item;
  });
}

function partsText(content: unknown): string {
  if (typeof content === "string") return content;
  return (content as Item[]).map((p) => String(p.text ?? p.refusal ?? "")).join("");
}

/** Items (input, or an earlier turn's output) as the conversation's messages; reasoning items are left out. */
export function itemsToMessages(items: Item[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const item of items) {
    const type = (item.type as string | undefined) ?? "message";
    if (type === "message") {
      const role = item.role === "developer" ? "system" : item.role as ChatMessage["role"];
      out.push({ role, content: partsText(item.content) });
    } else if (type === "function_call") {
      const call: ChatToolCall = {
        id: String(item.call_id),
        name: String(item.name),
        arguments: String(item.arguments),
      };
      // Calls of one turn, and a turn's text before its calls, are one assistant message.
      const last = out.at(-1);
      if (last?.role === "assistant") (last.toolCalls ??= []).push(call);
      else out.push({ role: "assistant", content: null, toolCalls: [call] });
    } else if (type === "function_call_output") {
      out.push({ role: "tool", content: partsText(item.output), toolCallId: String(item.call_id) });
    }
  }
  return out;
}

function chatToolChoice(choice: ResponseToolChoice | undefined): ChatCompletionRequest["tool_choice"] {
  if (choice === undefined || typeof choice === "string") return choice;
  if (choice.type === "function") return { type: "function", function: { name: choice.name } };
  return {
    type: "allowed_tools",
    allowed_tools: {
      mode: choice.mode,
      tools: choice.tools.map((t) => ({ type: "function" as const, function: { name: t.name } })),
    },
  };
}

/** The tool plan of a Responses request, its 400s naming the Responses fields (`tools[0].parameters`). */
export function toolPlanOf(
  body: Pick<CreateResponseRequest, "tools" | "tool_choice" | "parallel_tool_calls">,
): ToolPlan {
  const plan = planTools({
    tools: (body.tools ?? []).map((t) => ({
      type: "function" as const,
      function: {
        name: t.name!,
        ...(t.description != null ? { description: t.description } : {}),
        ...(t.parameters != null ? { parameters: t.parameters } : {}),
        ...(t.strict != null ? { strict: t.strict } : {}),
      },
    })),
    tool_choice: chatToolChoice(body.tool_choice),
    parallel_tool_calls: body.parallel_tool_calls,
  });
  plan.declared.forEach((d, i) => (d.param = `tools[${i}].parameters`));
  return plan;
}
