// Owns what a chat request's tool fields mean for one generation (issue 7): which tools the chat template
// offers the model, whether calls are read from its output and how many are kept, and which calls are
// forced by constrained decoding. `tools` + `tool_choice`: none (no tools offered; any call markup the model
// still writes is kept out of the content and dropped), auto (calls parsed), required (a call to one of the
// tools, forced), a named function (a call to it, forced), allowed_tools (only those offered, auto or
// required). `parallel_tool_calls` false keeps one call. The deprecated `functions` + `function_call` run the
// same way with one call at most; the API module then answers with `function_call` as OpenAI does.
// Strict tools' parameters must compile in strict mode whatever the choice (as OpenAI checks them up front):
// the pipeline's checkJob does that before the model is loaded.
import type { ChatTool, ChatToolDecl, ChatToolPlan } from "../engines/types.ts";
import type { ChatCompletionRequest } from "../protocol/chat.ts";
import type { FunctionCall, ToolChoice } from "../protocol/chat_tools.ts";

/** The native plan, and whether the request used the deprecated functions / function_call. */
export interface ToolPlan extends ChatToolPlan {
  legacy: boolean;
}

type Body = Pick<
  ChatCompletionRequest,
  "tools" | "tool_choice" | "parallel_tool_calls" | "functions" | "function_call"
>;

function declared(body: Body): ChatToolDecl[] {
  if (body.functions) {
    return body.functions.map((f, i) => ({
      tool: toTool(f),
      param: `functions[${i}].parameters`,
    }));
  }
  return (body.tools ?? []).map((t, i) => ({
    tool: toTool(t.function),
    param: `tools[${i}].function.parameters`,
  }));
}

function toTool(f: {
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}): ChatTool {
  const tool: ChatTool = { name: f.name };
  if (f.description != null) tool.description = f.description;
  if (f.parameters != null) tool.parameters = f.parameters;
  if (f.strict != null) tool.strict = f.strict;
  return tool;
}

/**
 * Reads the tool fields (already validated by the wire schema) into the native plan; their schemas are checked
 * by the chat pipeline (src/chat/grammar.ts), which names each tool's `param`.
 */
export function planTools(body: Body): ToolPlan {
  const all = declared(body);
  const tools = all.map((d) => d.tool);
  const legacy = body.functions !== undefined;
  const param = legacy ? "functions" : "tools";
  const decls = (list: ChatTool[]) => all.filter((d) => list.includes(d.tool));
  const none: ToolPlan = {
    declared: all,
    offered: undefined,
    parse: false,
    maxCalls: 0,
    forced: null,
    legacy,
    param,
  };
  if (tools.length === 0) return none;
  const parallel = !legacy && body.parallel_tool_calls !== false;
  const maxCalls = parallel ? Infinity : 1;
  const choice = legacy ? body.function_call ?? "auto" : body.tool_choice ?? "auto";
  if (choice === "none") return { ...none, parse: true };
  if (choice === "auto") return { ...none, offered: tools, parse: true, maxCalls };
  if (choice === "required") {
    return { ...none, offered: tools, parse: true, maxCalls, forced: { tools: all, parallel } };
  }
  if (!legacy && (choice as ToolChoice & object).type === "allowed_tools") {
    const { allowed_tools } = choice as Extract<ToolChoice, { type: "allowed_tools" }>;
    const names = new Set(allowed_tools.tools.map((t) => t.function.name));
    const allowed = tools.filter((t) => names.has(t.name));
    return {
      ...none,
      offered: allowed,
      parse: true,
      maxCalls,
      forced: allowed_tools.mode === "required" ? { tools: decls(allowed), parallel } : null,
    };
  }
  const name = legacy
    ? (choice as Extract<FunctionCall, { name: string }>).name
    : (choice as Extract<ToolChoice, { type: "function" }>).function.name;
  const named = all.filter((d) => d.tool.name === name);
  return { ...none, offered: tools, parse: true, maxCalls: 1, forced: { tools: named, parallel: false } };
}
