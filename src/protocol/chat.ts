// Owns the wire schema of POST /v1/chat/completions (OpenAI's CreateChatCompletionRequest): messages of every
// role with string or text-part content (image, audio and file parts are refused naming the part's `type`),
// every sampling parameter with OpenAI's ranges, and the vLLM-style extensions `top_k`, `min_tokens` and
// `ignore_eos`; the tool and response-format fields are in chat_tools.ts. Unknown fields the SDKs send
// (metadata, store, service_tier, ...) pass and are ignored.
// Model-dependent checks (context window, token ids in logit_bias) happen in the API module.
import { z } from "zod";
import {
  FunctionCall,
  Functions,
  FunctionTool,
  refineTools,
  ResponseFormat,
  ToolChoice,
} from "./chat_tools.ts";

type Ctx = z.core.$RefinementCtx<unknown>;

function missing(ctx: Ctx, path: (string | number)[]): void {
  ctx.addIssue({ code: "invalid_type", expected: "string" as never, input: undefined, path });
}

/** `{type: "text", text}`; other part types are refused with the part's `type` as the param. */
const ContentPart = z.looseObject({ type: z.string(), text: z.unknown().optional() }).superRefine(
  (p, ctx) => {
    if (p.type === "text" || p.type === "refusal") {
      const key = p.type === "text" ? "text" : "refusal";
      const v = (p as Record<string, unknown>)[key];
      if (typeof v !== "string") {
        ctx.addIssue({ code: "invalid_type", expected: "string" as never, input: v, path: [key] });
      }
      return;
    }
    ctx.addIssue({
      code: "custom",
      path: ["type"],
      message: p.type === "image_url" || p.type === "input_audio" || p.type === "file"
        ? `content parts of type '${p.type}' are not supported: this server's chat models take text only.`
        : `expected 'text', but got '${p.type}'.`,
    });
  },
);

const Content = z.union([z.string(), z.array(ContentPart)]);

const ToolCall = z.looseObject({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const ROLES = ["system", "developer", "user", "assistant", "tool", "function"] as const;

const Message = z.looseObject({
  role: z.enum(ROLES),
  content: Content.nullable().optional(),
  name: z.string().optional(),
  tool_calls: z.array(ToolCall).optional(),
  tool_call_id: z.string().optional(),
  function_call: z.looseObject({ name: z.string(), arguments: z.string() }).nullable().optional(),
  refusal: z.string().nullable().optional(),
}).superRefine((m, ctx) => {
  const hasContent = m.content !== undefined && m.content !== null;
  switch (m.role) {
    case "assistant":
      // An assistant turn may carry only tool calls.
      if (!hasContent && !m.tool_calls?.length && !m.function_call && m.refusal == null) {
        missing(ctx, ["content"]);
      }
      return;
    case "tool":
      if (!hasContent) missing(ctx, ["content"]);
      else if (m.tool_call_id === undefined) missing(ctx, ["tool_call_id"]);
      return;
    case "function":
      if (m.name === undefined) missing(ctx, ["name"]);
      return;
    default:
      if (!hasContent) missing(ctx, ["content"]);
  }
});

const nullable = <T extends z.ZodType>(t: T) => t.nullable().optional();

/** What chat and legacy completions check alike: at most 4 stop sequences, and logit_bias keys are token ids. */
export function refineStopAndBias(
  r: { stop?: string | string[] | null; logit_bias?: Record<string, number> | null },
  ctx: Ctx,
): void {
  // Checked here (not by the array schema) so the 400 names `stop` with OpenAI's array code.
  if (Array.isArray(r.stop) && r.stop.length > 4) {
    ctx.addIssue({
      code: "too_big",
      origin: "array",
      maximum: 4,
      inclusive: true,
      input: r.stop,
      path: ["stop"],
    });
  }
  for (const key of Object.keys(r.logit_bias ?? {})) {
    if (!/^\d+$/.test(key)) {
      ctx.addIssue({
        code: "custom",
        path: ["logit_bias"],
        message: `keys must be token ids (integers), but got '${key}'.`,
      });
      return;
    }
  }
}

/** OpenAI's effort levels; `none` and `minimal` turn a thinking model's block off (enable_thinking false). */
export const ReasoningEffort = z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]);

export const ChatCompletionRequest = z.looseObject({
  model: z.string(),
  messages: z.array(Message).min(1),
  temperature: nullable(z.number().min(0).max(2)),
  top_p: nullable(z.number().min(0).max(1)),
  n: nullable(z.number().int().min(1).max(128)),
  max_tokens: nullable(z.number().int().min(1)),
  max_completion_tokens: nullable(z.number().int().min(1)),
  // At most 4 stop sequences: checked below so the 400 names `stop` with OpenAI's array code.
  stop: nullable(z.union([z.string(), z.array(z.string())])),
  stream: nullable(z.boolean()),
  stream_options: nullable(z.looseObject({ include_usage: z.boolean().optional() })),
  // OpenAI takes any 64-bit integer; JSON numbers beyond 2^53 arrive rounded but still integral.
  seed: nullable(z.number().refine(Number.isInteger, "must be an integer")),
  presence_penalty: nullable(z.number().min(-2).max(2)),
  frequency_penalty: nullable(z.number().min(-2).max(2)),
  logit_bias: nullable(z.record(z.string(), z.number().min(-100).max(100))),
  logprobs: nullable(z.boolean()),
  top_logprobs: nullable(z.number().int().min(0).max(20)),
  user: z.string().optional(),
  tools: z.array(FunctionTool).optional(),
  tool_choice: ToolChoice.optional(),
  parallel_tool_calls: nullable(z.boolean()),
  functions: Functions.optional(),
  function_call: FunctionCall.optional(),
  response_format: ResponseFormat.optional(),
  reasoning_effort: nullable(ReasoningEffort),
  // Extensions (vLLM's names): sampling cut-off and benchmark controls.
  top_k: nullable(z.number().int().min(-1)),
  min_tokens: nullable(z.number().int().min(0)),
  ignore_eos: nullable(z.boolean()),
}).superRefine((r, ctx) => {
  refineTools(r, ctx);
  refineStopAndBias(r, ctx);
  if (r.top_logprobs != null && r.logprobs !== true) {
    ctx.addIssue({
      code: "custom",
      path: ["top_logprobs"],
      message: "'logprobs' must be set to true when 'top_logprobs' is used.",
    });
  }
});

export type ChatCompletionRequest = z.output<typeof ChatCompletionRequest>;
export type ChatRequestMessage = ChatCompletionRequest["messages"][number];
export type ChatRequestContent = NonNullable<ChatRequestMessage["content"]>;
