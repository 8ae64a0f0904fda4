// Owns the wire schemas of Anthropic's Messages API (POST /v1/messages and /v1/messages/count_tokens):
// `system` as a string or text blocks, `messages` whose content is a string or blocks (text, tool_use,
// tool_result, thinking, redacted_thinking; image, document and the server-tool blocks are refused naming
// their `type`), custom tools with an `input_schema` (Anthropic's server tools such as `bash_20250124` are
// refused), tool_choice, thinking, sampling and metadata. Unknown fields pass (they are reported by the
// route as ignored); `role: "system"` inside `messages` is accepted, as Claude Code sends it.
import { z } from "zod";

/** A prompt-cache breakpoint: honoured as a hint to keep the prompt cached (src/api/messages_input.ts). */
export const CacheControl = z.looseObject({
  type: z.literal("ephemeral"),
  ttl: z.enum(["5m", "1h"]).optional(),
});

const TextBlock = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  cache_control: CacheControl.nullable().optional(),
});
export type TextBlock = z.infer<typeof TextBlock>;

const ToolUseBlock = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
  cache_control: CacheControl.nullable().optional(),
});

/** Blocks a tool result may hold: text only until the server has vision. */
const ToolResultContent = z.union([
  z.string(),
  z.array(z.looseObject({ type: z.string(), text: z.unknown().optional() }).superRefine(textOnly)),
]);

const ToolResultBlock = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string(),
  content: ToolResultContent.optional(),
  is_error: z.boolean().optional(),
  cache_control: CacheControl.nullable().optional(),
});

const ThinkingBlock = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string().optional(),
});

const RedactedThinkingBlock = z.looseObject({ type: z.literal("redacted_thinking"), data: z.string() });

const BLOCKS: Record<string, z.ZodType> = {
  text: TextBlock,
  tool_use: ToolUseBlock,
  tool_result: ToolResultBlock,
  thinking: ThinkingBlock,
  redacted_thinking: RedactedThinkingBlock,
};

const VISION = new Set(["image", "document", "search_result"]);

function refuse(type: string): string {
  return VISION.has(type)
    ? `content blocks of type '${type}' are not supported: this server's chat models take text only.`
    : `content blocks of type '${type}' are not supported: this server takes text, tool_use, tool_result, ` +
      "thinking and redacted_thinking blocks.";
}

// deno-lint-ignore no-explicit-any
function textOnly(block: { type: string; text?: unknown }, ctx: any): void {
  if (block.type !== "text") {
    ctx.addIssue({ code: "custom", path: ["type"], message: refuse(block.type) });
  } else if (typeof block.text !== "string") {
    ctx.addIssue({ code: "invalid_type", expected: "string", input: block.text, path: ["text"] });
  }
}

/** Any content block: checked against its type's schema, unknown and unsupported types refused by name. */
const ContentBlock = z.looseObject({ type: z.string() }).superRefine((block, ctx) => {
  const schema = BLOCKS[block.type];
  if (!schema) {
    ctx.addIssue({ code: "custom", path: ["type"], message: refuse(block.type) });
    return;
  }
  const r = schema.safeParse(block, { reportInput: true });
  if (!r.success) { for (const issue of r.error.issues) ctx.addIssue(issue as never); }
});
export type ContentBlock = { type: string } & Record<string, unknown>;

export const InputMessage = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(ContentBlock)]),
});
export type InputMessage = z.infer<typeof InputMessage>;

const CustomTool = z.looseObject({
  type: z.string().optional(),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, "tool names are 1-128 letters, digits, '_' or '-'"),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal("object") }),
  cache_control: CacheControl.nullable().optional(),
});

/** Custom tools (no `type`, or `custom`); Anthropic's server and client tool types are refused by name. */
const Tool = z.looseObject({ type: z.string().optional() }).superRefine((tool, ctx) => {
  if (tool.type !== undefined && tool.type !== "custom") {
    ctx.addIssue({
      code: "custom",
      path: ["type"],
      message: `tools of type '${tool.type}' are not supported: this server runs custom tools only ` +
        "(name, description, input_schema).",
    });
    return;
  }
  const r = CustomTool.safeParse(tool, { reportInput: true });
  if (!r.success) { for (const issue of r.error.issues) ctx.addIssue(issue as never); }
});
export type Tool = z.infer<typeof CustomTool>;

export const ToolChoice = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({
    type: z.literal("tool"),
    name: z.string(),
    disable_parallel_tool_use: z.boolean().optional(),
  }),
  z.looseObject({ type: z.literal("none") }),
]);
export type ToolChoice = z.infer<typeof ToolChoice>;

/**
 * `display: "omitted"` returns thinking blocks with their signature and no text (Claude Code asks so); any other
 * value (`summarized`, Claude Code's `updates`, ...) returns the thinking itself: a local model has no separate
 * summarizer, and the verbatim text is what such a view would be made from. Any string is taken, so a client
 * that names a newer mode is not refused.
 */
const Display = z.string().optional();

export const Thinking = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024), display: Display }),
  z.looseObject({ type: z.literal("disabled") }),
  z.looseObject({ type: z.literal("adaptive"), display: Display }),
]);
export type Thinking = z.infer<typeof Thinking>;

const System = z.union([z.string(), z.array(TextBlock)]);

/** Structured output and effort (Anthropic's `output_config`). */
export const OutputConfig = z.looseObject({
  effort: z.enum(["low", "medium", "high", "xhigh", "max"]).nullable().optional(),
  format: z.looseObject({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown()) })
    .nullable().optional(),
});

/** What shapes the prompt: shared by POST /v1/messages and /v1/messages/count_tokens. */
const PromptFields = {
  model: z.string().min(1),
  messages: z.array(InputMessage).min(1),
  system: System.optional(),
  tools: z.array(Tool).optional(),
  tool_choice: ToolChoice.optional(),
  thinking: Thinking.optional(),
  output_config: OutputConfig.optional(),
};

export const CreateMessageRequest = z.looseObject({
  ...PromptFields,
  max_tokens: z.number().int().min(1),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  metadata: z.looseObject({ user_id: z.string().max(256).nullable().optional() }).optional(),
}).superRefine((body, ctx) => {
  // Anthropic's own rule: the thinking budget is part of max_tokens.
  if (body.thinking?.type === "enabled" && body.thinking.budget_tokens >= body.max_tokens) {
    ctx.addIssue({
      code: "custom",
      path: ["thinking", "budget_tokens"],
      message: "`max_tokens` must be greater than `thinking.budget_tokens`.",
    });
  }
});
export type CreateMessageRequest = z.infer<typeof CreateMessageRequest>;

export const CountTokensRequest = z.looseObject(PromptFields);
export type CountTokensRequest = z.infer<typeof CountTokensRequest>;

/** GET /v1/models paging, Anthropic's way (used when the request carries `anthropic-version`). */
export const AnthropicModelsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  before_id: z.string().optional(),
  after_id: z.string().optional(),
});
