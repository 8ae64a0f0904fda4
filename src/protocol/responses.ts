// Owns the wire schemas of the Responses API (OpenAI's CreateResponse and its input items): `input` as a
// string or items (messages with text parts, earlier function_call / function_call_output / reasoning
// items), function tools (other tool types are refused naming their `type`), tool_choice, text.format,
// reasoning, sampling and the state fields (store, previous_response_id). Image, file and audio parts are
// refused naming the part's `type`, as chat does.
import { z } from "zod";
import { ReasoningEffort } from "./chat.ts";

const nullable = <T extends z.ZodType>(t: T) => t.nullable().optional();

/** A text part; other part types are refused with the part's `type` as the param. */
const InputPart = z.looseObject({ type: z.string(), text: z.unknown().optional() }).superRefine((p, ctx) => {
  if (p.type === "input_text" || p.type === "output_text" || p.type === "text") {
    if (typeof p.text !== "string") {
      ctx.addIssue({ code: "invalid_type", expected: "string" as never, input: p.text, path: ["text"] });
    }
    return;
  }
  if (p.type === "refusal") return;
  ctx.addIssue({
    code: "custom",
    path: ["type"],
    message: ["input_image", "input_file", "input_audio"].includes(p.type)
      ? `content parts of type '${p.type}' are not supported: this server's chat models take text only.`
      : `expected 'input_text', but got '${p.type}'.`,
  });
});

const MessageItem = z.looseObject({
  type: z.literal("message").optional(),
  id: z.string().optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(InputPart)]),
});

const FunctionCallItem = z.looseObject({
  type: z.literal("function_call"),
  id: z.string().optional(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});

const FunctionCallOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  id: z.string().optional(),
  call_id: z.string(),
  output: z.union([z.string(), z.array(InputPart)]),
});

/** Earlier reasoning is accepted and left out of the prompt (thinking templates drop it from history too). */
const ReasoningItem = z.looseObject({ type: z.literal("reasoning"), id: z.string().optional() });

const KNOWN_ITEMS = new Set(["message", "function_call", "function_call_output", "reasoning"]);

const InputItem = z.looseObject({ type: z.string().optional() }).superRefine((item, ctx) => {
  const type = item.type ?? "message";
  if (!KNOWN_ITEMS.has(type)) {
    ctx.addIssue({
      code: "custom",
      path: ["type"],
      message: `input items of type '${type}' are not supported: this server takes message, function_call, ` +
        "function_call_output and reasoning items.",
    });
    return;
  }
  const schema = type === "message"
    ? MessageItem
    : type === "function_call"
    ? FunctionCallItem
    : type === "function_call_output"
    ? FunctionCallOutputItem
    : ReasoningItem;
  const r = schema.safeParse(item, { reportInput: true });
  if (!r.success) { for (const issue of r.error.issues) ctx.addIssue(issue as never); }
});

const FunctionToolDef = z.looseObject({
  type: z.string(),
  name: z.string().optional(),
  description: nullable(z.string()),
  parameters: nullable(z.record(z.string(), z.unknown())),
  strict: nullable(z.boolean()),
}).superRefine((t, ctx) => {
  if (t.type !== "function") {
    ctx.addIssue({
      code: "custom",
      path: ["type"],
      message: `tools of type '${t.type}' are not supported: this server runs function tools only.`,
    });
  } else if (typeof t.name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(t.name)) {
    ctx.addIssue({
      code: "custom",
      path: ["name"],
      message: "a function name must be 1 to 64 letters, digits, underscores or dashes.",
    });
  }
});

type ToolChoice = z.output<typeof ToolChoice>;
const ToolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  z.looseObject({ type: z.literal("function"), name: z.string() }),
  z.looseObject({
    type: z.literal("allowed_tools"),
    mode: z.enum(["auto", "required"]),
    tools: z.array(z.looseObject({ type: z.literal("function"), name: z.string() })),
  }),
]);

const TextFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
    schema: z.record(z.string(), z.unknown()),
    description: nullable(z.string()),
    strict: nullable(z.boolean()),
  }),
]);

/** A tool_choice may only name tools the request declares (chat's rule and wording). */
function refineToolChoice(
  r: { tools?: { name?: string | undefined }[] | undefined; tool_choice?: ToolChoice | undefined },
  ctx: z.core.$RefinementCtx<unknown>,
): void {
  const choice = r.tool_choice;
  if (!choice || typeof choice !== "object") return;
  const names = new Set((r.tools ?? []).map((t) => t.name));
  const named = choice.type === "function" ? [choice.name] : choice.tools.map((t) => t.name);
  const unknown = named.find((n) => !names.has(n));
  if (unknown !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["tool_choice"],
      message: `no function named '${unknown}' was specified in 'tools'.`,
    });
  }
}

/** The fields that shape a prompt (shared by create and input_tokens). */
const PromptFields = {
  model: z.string(),
  input: z.union([z.string(), z.array(InputItem)]).optional(),
  instructions: nullable(z.string()),
  previous_response_id: nullable(z.string()),
  tools: z.array(FunctionToolDef).optional(),
  tool_choice: ToolChoice.optional(),
  parallel_tool_calls: nullable(z.boolean()),
  text: nullable(z.looseObject({ format: TextFormat.optional(), verbosity: nullable(z.string()) })),
  reasoning: nullable(
    z.looseObject({
      effort: nullable(ReasoningEffort),
      summary: nullable(z.enum(["auto", "concise", "detailed"])),
    }),
  ),
};

export const CreateResponseRequest = z.looseObject({
  ...PromptFields,
  max_output_tokens: nullable(z.number().int().min(1)),
  temperature: nullable(z.number().min(0).max(2)),
  top_p: nullable(z.number().min(0).max(1)),
  top_logprobs: nullable(z.number().int().min(0).max(20)),
  stream: nullable(z.boolean()),
  store: nullable(z.boolean()),
  metadata: nullable(z.record(z.string().max(64), z.string().max(512))),
  user: nullable(z.string()),
  safety_identifier: nullable(z.string()),
  background: nullable(z.boolean()),
}).superRefine((r, ctx) => {
  refineToolChoice(r, ctx);
  if (r.input === undefined && !r.previous_response_id) {
    ctx.addIssue({ code: "invalid_type", expected: "string" as never, input: undefined, path: ["input"] });
  }
  if (r.metadata && Object.keys(r.metadata).length > 16) {
    ctx.addIssue({ code: "custom", path: ["metadata"], message: "at most 16 keys are allowed." });
  }
  if (r.background) {
    ctx.addIssue({
      code: "custom",
      path: ["background"],
      message: "background responses are not supported: use stream to follow a long response.",
    });
  }
});

export const InputTokensRequest = z.looseObject(PromptFields).superRefine(refineToolChoice);

export type CreateResponseRequest = z.output<typeof CreateResponseRequest>;
export type InputTokensRequest = z.output<typeof InputTokensRequest>;
export type ResponseToolChoice = z.output<typeof ToolChoice>;
export type TextFormat = z.output<typeof TextFormat>;

export const ListInputItemsQuery = z.looseObject({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  order: z.enum(["asc", "desc"]).optional(),
  after: z.string().optional(),
});
