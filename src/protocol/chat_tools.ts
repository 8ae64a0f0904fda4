// Owns the wire schema of the chat request's tool-calling and structured-output fields (issue 7): `tools`,
// `tool_choice` (none / auto / required / a named function / allowed_tools), `parallel_tool_calls`, the
// deprecated `functions` and `function_call`, and `response_format` (text / json_object / json_schema), with
// the cross-field rules OpenAI enforces (tool_choice needs tools and must name one of them). Whether a schema
// compiles is checked in the API module (it needs the grammar compiler).
import { z } from "zod";

type Ctx = z.core.$RefinementCtx<unknown>;

/** OpenAI's rule for function and response-format names. */
export const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const NAME_RULE = "must be 1-64 letters, digits, underscores or dashes";
const Name = z.string().regex(NAME, NAME_RULE);

/** A JSON Schema object (its contents are checked when compiled). */
const SchemaObject = z.record(z.string(), z.unknown());

const FunctionDef = z.looseObject({
  name: Name,
  description: z.string().nullable().optional(),
  parameters: SchemaObject.nullable().optional(),
  strict: z.boolean().nullable().optional(),
});

export const FunctionTool = z.looseObject({ type: z.literal("function"), function: FunctionDef });

const NamedFunction = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({ name: z.string() }),
});

export const ToolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  z.discriminatedUnion("type", [
    NamedFunction,
    z.looseObject({
      type: z.literal("allowed_tools"),
      allowed_tools: z.looseObject({
        mode: z.enum(["auto", "required"]),
        tools: z.array(NamedFunction).min(1),
      }),
    }),
  ]),
], {
  error: "expected 'none', 'auto', 'required', {type: 'function', function: {name}} or " +
    "{type: 'allowed_tools', allowed_tools: {mode, tools}}",
});

/** Deprecated `functions`: the function objects of `tools` without the wrapper. */
export const Functions = z.array(FunctionDef.omit({ strict: true })).min(1);

export const FunctionCall = z.union([
  z.enum(["none", "auto"]),
  z.looseObject({ name: z.string() }),
], { error: "expected 'none', 'auto' or {name}" });

const JsonSchemaFormat = z.looseObject({
  name: Name,
  description: z.string().nullable().optional(),
  schema: SchemaObject,
  strict: z.boolean().nullable().optional(),
});

export const ResponseFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({ type: z.literal("json_schema"), json_schema: JsonSchemaFormat }),
]);

export type ToolChoice = z.output<typeof ToolChoice>;
export type FunctionCall = z.output<typeof FunctionCall>;
export type ResponseFormat = z.output<typeof ResponseFormat>;

interface ToolFields {
  tools?: { function: { name: string } }[] | undefined;
  tool_choice?: ToolChoice | undefined;
  functions?: { name: string }[] | undefined;
  function_call?: FunctionCall | undefined;
}

function issue(ctx: Ctx, path: (string | number)[], message: string): void {
  ctx.addIssue({ code: "custom", path, message });
}

/** The rules between the tool fields (run from the request's superRefine). */
export function refineTools(r: ToolFields, ctx: Ctx): void {
  if (r.tools !== undefined && r.functions !== undefined) {
    issue(
      ctx,
      ["functions"],
      "'functions' is deprecated and cannot be combined with 'tools'; use 'tools' only.",
    );
  }
  if (r.tool_choice !== undefined && r.function_call !== undefined) {
    issue(
      ctx,
      ["function_call"],
      "'function_call' cannot be combined with 'tool_choice'; use 'tool_choice'.",
    );
  }
  const tools = new Set((r.tools ?? []).map((t) => t.function.name));
  const choice = r.tool_choice;
  if (choice !== undefined && !r.tools?.length) {
    issue(ctx, ["tool_choice"], "'tool_choice' is only allowed when 'tools' are specified.");
  } else if (choice !== undefined && typeof choice === "object") {
    const names = choice.type === "function"
      ? [choice.function.name]
      : choice.allowed_tools.tools.map((t) => t.function.name);
    const unknown = names.find((n) => !tools.has(n));
    if (unknown !== undefined) {
      issue(ctx, ["tool_choice"], `no function named '${unknown}' was specified in 'tools'.`);
    }
  }
  const fc = r.function_call;
  if (fc !== undefined && !r.functions?.length) {
    issue(ctx, ["function_call"], "'function_call' is only allowed when 'functions' are specified.");
  } else if (fc !== undefined && typeof fc === "object" && !r.functions?.some((f) => f.name === fc.name)) {
    issue(ctx, ["function_call"], `no function named '${fc.name}' was specified in 'functions'.`);
  }
}
