// Owns what a chat request's tool fields mean for one generation (issue 7): which tools the chat template
// offers the model, whether calls are read from its output and how many are kept, and which calls are
// forced by constrained decoding. `tools` + `tool_choice`: none (no tools offered; any call markup the model
// still writes is kept out of the content and dropped), auto (calls parsed), required (a call to one of the
// tools, forced), a named function (a call to it, forced), allowed_tools (only those offered, auto or
// required). `parallel_tool_calls` false keeps one call. The deprecated `functions` + `function_call` run the
// same way with one call at most; the API module then answers with `function_call` as OpenAI does.
// Strict tools' parameters must compile in strict mode whatever the choice (as OpenAI checks them up front).
import { compileJsonSchema, type Grammar, toolCallGrammar, type ToolSpec } from "../chat/constrain/mod.ts";
import type { ToolCallFormat } from "../chat/tools/mod.ts";
import type { ChatTool } from "../engines/types.ts";
import type { ChatCompletionRequest } from "../protocol/chat.ts";
import type { FunctionCall, ToolChoice } from "../protocol/chat_tools.ts";
import { ApiError } from "../http/errors.ts";
import { compileSchema, schemaError } from "./chat_format.ts";

export interface ToolPlan {
  /** Tools rendered into the prompt (undefined: none). */
  offered: ChatTool[] | undefined;
  /** Read tool calls out of the output. */
  parse: boolean;
  /** Calls kept from the output (0: tool_choice none, markup dropped). */
  maxCalls: number;
  /** Tools a forced call may name (tool_choice required or a named function), else null. */
  forced: { tools: ChatTool[]; parallel: boolean } | null;
  /** The request used the deprecated functions / function_call. */
  legacy: boolean;
}

type Body = Pick<
  ChatCompletionRequest,
  "tools" | "tool_choice" | "parallel_tool_calls" | "functions" | "function_call"
>;

interface Declared {
  tool: ChatTool;
  /** Where the tool's parameters are in the request, for 400s. */
  param: string;
}

function declared(body: Body): Declared[] {
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

/** Reads the tool fields (already validated by the wire schema); throws 400 for strict tools that can't compile. */
export function planTools(body: Body): ToolPlan {
  const all = declared(body);
  checkStrict(all);
  const tools = all.map((d) => d.tool);
  const legacy = body.functions !== undefined;
  const none: ToolPlan = { offered: undefined, parse: false, maxCalls: 0, forced: null, legacy };
  if (tools.length === 0) return none;
  const parallel = !legacy && body.parallel_tool_calls !== false;
  const maxCalls = parallel ? Infinity : 1;
  const choice = legacy ? body.function_call ?? "auto" : body.tool_choice ?? "auto";
  if (choice === "none") return { ...none, parse: true };
  if (choice === "auto") return { offered: tools, parse: true, maxCalls, forced: null, legacy };
  if (choice === "required") {
    return { offered: tools, parse: true, maxCalls, forced: { tools, parallel }, legacy };
  }
  if (!legacy && (choice as ToolChoice & object).type === "allowed_tools") {
    const { allowed_tools } = choice as Extract<ToolChoice, { type: "allowed_tools" }>;
    const names = new Set(allowed_tools.tools.map((t) => t.function.name));
    const allowed = tools.filter((t) => names.has(t.name));
    return {
      offered: allowed,
      parse: true,
      maxCalls,
      forced: allowed_tools.mode === "required" ? { tools: allowed, parallel } : null,
      legacy,
    };
  }
  const name = legacy
    ? (choice as Extract<FunctionCall, { name: string }>).name
    : (choice as Extract<ToolChoice, { type: "function" }>).function.name;
  const named = tools.filter((t) => t.name === name);
  return { offered: tools, parse: true, maxCalls: 1, forced: { tools: named, parallel: false }, legacy };
}

/**
 * Parameters describe an object (the arguments), as OpenAI requires; strict tools' parameters must be in the
 * supported subset (400 naming the keyword otherwise).
 */
function checkStrict(all: Declared[]): void {
  for (const d of all) {
    const type = d.tool.parameters?.type;
    if (type !== undefined && type !== "object") {
      throw ApiError.badRequest(
        `Invalid schema for function '${d.tool.name}': the parameters must be a JSON Schema of type 'object', ` +
          `got type ${JSON.stringify(type)}.`,
        d.param,
        "invalid_json_schema",
      );
    }
    if (d.tool.strict !== true) continue;
    compileSchema(
      () => compileJsonSchema(d.tool.parameters ?? NO_PARAMS, { strict: true }),
      d.param,
      `function '${d.tool.name}'`,
    );
  }
}

const NO_PARAMS = { type: "object", properties: {}, additionalProperties: false };

/** The grammar of a forced call in the model's tool-call format; 400 naming the tool whose schema fails. */
export function forcedCallGrammar(plan: ToolPlan, body: Body, format: ToolCallFormat): Grammar {
  const forced = plan.forced!;
  const specs: ToolSpec[] = forced.tools.map((t) => ({
    name: t.name,
    ...(t.parameters !== undefined ? { parameters: t.parameters } : {}),
    strict: t.strict === true,
  }));
  try {
    return toolCallGrammar(specs, { parallel: forced.parallel, format });
  } catch (e) {
    const index = (e as { tool?: number }).tool;
    const tool = index !== undefined ? forced.tools[index] : undefined;
    const d = tool ? declared(body).find((x) => x.tool.name === tool.name) : undefined;
    throw schemaError(
      e,
      d?.param ?? (body.functions ? "functions" : "tools"),
      `function '${tool?.name ?? "?"}'`,
    );
  }
}
