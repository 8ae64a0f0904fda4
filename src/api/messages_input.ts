// Owns reading an Anthropic Messages request into native terms: `system` (string or text blocks) and the
// `messages` blocks as the chat pipeline's conversation, custom tools + tool_choice as chat's tool plan (so
// tools render, parse and are forced exactly as in chat completions), `thinking` as the template's thinking
// switch, and whether the prompt carries `cache_control` breakpoints. Two choices worth knowing:
// - Claude Code's first system block, `x-anthropic-billing-header: cc_version=...; ...`, is a billing header
//   carried in the prompt; its version suffix changes with every request. It is not part of the prompt (it
//   means nothing to a model), or no turn could reuse the cached system prompt and tools that follow it.
// - Earlier turns' thinking and redacted_thinking blocks are left out of the prompt: the thinking templates
//   drop past reasoning themselves (Qwen3, DeepSeek R1), and a redacted block has no text to show.
// - A `role: "system"` message inside `messages` (Claude Code sends its environment that way, after the first
//   question) joins the system prompt when nothing but system text comes before it, and otherwise the user
//   turn before it (or after it): many templates (Gemma, Mistral, Llama 2) refuse a system turn past the start
//   or turns that do not alternate, and text in the user's turn is where every template can show it.
import type { ChatMessage, ChatToolCall } from "../engines/types.ts";
import { ApiError } from "../http/errors.ts";
import type {
  ContentBlock,
  CountTokensRequest,
  InputMessage,
  Tool,
  ToolChoice,
} from "../protocol/messages.ts";
import { planTools, type ToolPlan } from "./chat_tools.ts";

type Prompt = Pick<CountTokensRequest, "system" | "messages" | "tools" | "tool_choice" | "thinking">;

/** What Claude Code writes at the start of its first system block; see the header comment. */
export const BILLING_HEADER = "x-anthropic-billing-header:";

function textOf(block: ContentBlock): string {
  return String(block.text ?? "");
}

/** The system prompt: text blocks in order (a billing header block left out), one blank line between them. */
export function systemText(system: Prompt["system"]): string | null {
  if (system === undefined) return null;
  if (typeof system === "string") return system || null;
  const parts = system.map((b) => b.text).filter((t) => !t.startsWith(BILLING_HEADER));
  return parts.length ? parts.join("\n\n") : null;
}

function toolResultText(block: ContentBlock): string {
  const c = block.content as string | ContentBlock[] | undefined;
  const text = c === undefined ? "" : typeof c === "string" ? c : c.map(textOf).join("\n");
  // The template has no slot for the error flag, so the model reads it in the result's text.
  return block.is_error === true ? `Error: ${text}` : text;
}

/** One wire message as chat messages: a user turn's tool results become `tool` messages, in place. */
function messagesOf(m: InputMessage, index: number, last: boolean): ChatMessage[] {
  const blocks: ContentBlock[] = typeof m.content === "string"
    ? [{ type: "text", text: m.content }]
    : m.content as ContentBlock[];
  if (m.role === "assistant") {
    if (last) {
      throw ApiError.badRequest(
        "A final assistant message (a prefilled reply) is not supported: end `messages` with a user turn.",
        `messages[${index}]`,
      );
    }
    const misplaced = blocks.findIndex((b) => b.type === "tool_result");
    if (misplaced >= 0) {
      throw ApiError.badRequest(
        "tool_result blocks belong in user messages.",
        `messages[${index}].content[${misplaced}].type`,
      );
    }
    const text = blocks.filter((b) => b.type === "text").map(textOf).join("");
    const calls: ChatToolCall[] = blocks.filter((b) => b.type === "tool_use").map((b) => ({
      id: String(b.id),
      name: String(b.name),
      arguments: JSON.stringify(b.input ?? {}),
    }));
    return [{
      role: "assistant",
      content: text || (calls.length ? null : ""),
      ...(calls.length ? { toolCalls: calls } : {}),
    }];
  }
  const out: ChatMessage[] = [];
  let text: string[] = [];
  const flush = () => {
    if (text.length) out.push({ role: m.role === "system" ? "system" : "user", content: text.join("\n") });
    text = [];
  };
  blocks.forEach((b, j) => {
    if (b.type === "text") text.push(textOf(b));
    else if (b.type === "tool_result") {
      if (m.role !== "user") {
        throw ApiError.badRequest(
          "tool_result blocks belong in user messages.",
          `messages[${index}].content[${j}].type`,
        );
      }
      flush();
      out.push({ role: "tool", content: toolResultText(b), toolCallId: String(b.tool_use_id) });
    } else if (b.type === "tool_use") {
      throw ApiError.badRequest(
        "tool_use blocks belong in assistant messages.",
        `messages[${index}].content[${j}].type`,
      );
    }
    // thinking and redacted_thinking: past thinking is left out of the prompt (see the header comment).
  });
  flush();
  return out;
}

/** The conversation the chat template renders: the system prompt first, then each message's turns. */
export function conversationOf(body: Prompt): ChatMessage[] {
  const turns = body.messages.flatMap((m, i) => messagesOf(m, i, i === body.messages.length - 1));
  const system = [systemText(body.system)].filter((t): t is string => t !== null);
  const out: ChatMessage[] = [];
  turns.forEach((t, i) => {
    if (t.role !== "system") return void out.push(t);
    if (out.length === 0) return void system.push(t.content ?? "");
    // Joins the user turn before it, or else the next one (see the header comment).
    const before = out.at(-1)!;
    const after = turns.slice(i + 1).find((n) => n.role !== "system");
    if (before.role === "user") before.content = `${before.content}\n\n${t.content}`;
    else if (after?.role === "user") after.content = `${t.content}\n\n${after.content}`;
    else out.push(t);
  });
  return system.length ? [{ role: "system", content: system.join("\n\n") }, ...out] : out;
}

function chatToolChoice(choice: ToolChoice | undefined) {
  if (choice === undefined || choice.type === "auto") return "auto" as const;
  if (choice.type === "any") return "required" as const;
  if (choice.type === "none") return "none" as const;
  return { type: "function" as const, function: { name: choice.name } };
}

/** The tool plan of a Messages request; 400s name the Messages fields (`tools[0].input_schema`). */
export function toolPlanOf(body: Prompt): ToolPlan {
  // The wire schema checked each tool against CustomTool (a refinement, so its type stays loose).
  const tools = (body.tools ?? []) as Tool[];
  const choice = body.tool_choice;
  if (choice?.type === "tool" && !tools.some((t) => t.name === choice.name)) {
    throw ApiError.badRequest(`Tool '${choice.name}' not found in tools.`, "tool_choice.name");
  }
  if (choice && choice.type !== "auto" && choice.type !== "none" && tools.length === 0) {
    throw ApiError.badRequest(
      `tool_choice '${choice.type}' needs at least one tool in tools.`,
      "tool_choice",
    );
  }
  const plan = planTools({
    tools: tools.map((t) => ({
      type: "function" as const,
      function: {
        name: t.name,
        ...(t.description != null ? { description: t.description } : {}),
        parameters: t.input_schema,
      },
    })),
    tool_choice: chatToolChoice(choice),
    parallel_tool_calls: choice && "disable_parallel_tool_use" in choice
      ? choice.disable_parallel_tool_use !== true
      : undefined,
  });
  plan.declared.forEach((d, i) => (d.param = `tools[${i}].input_schema`));
  return plan;
}

/** `disabled` asks the template not to think; `enabled` and `adaptive` leave the model's default. */
export function thinkingSwitch(thinking: Prompt["thinking"]): { thinking?: boolean } {
  return thinking?.type === "disabled" ? { thinking: false } : {};
}

/** Whether any block of the prompt carries a `cache_control` breakpoint. */
export function hasCacheBreakpoints(body: Prompt): boolean {
  const marked = (b: unknown) => (b as { cache_control?: unknown } | null)?.cache_control != null;
  if (Array.isArray(body.system) && body.system.some(marked)) return true;
  if ((body.tools ?? []).some(marked)) return true;
  return body.messages.some((m) => Array.isArray(m.content) && m.content.some(marked));
}
