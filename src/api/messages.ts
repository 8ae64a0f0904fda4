// Owns Anthropic's Messages API on the chat pipeline: POST /v1/messages (the wire request -> a native ChatJob
// through messages_input.ts -> the model's queue and the same pipeline as chat completions and Responses ->
// the message object, or Anthropic's named SSE events: message_start, content_block_* with a ping after the
// first block starts, message_delta with the stop reason and usage, message_stop) and POST
// /v1/messages/count_tokens (the prompt's size through the model's own template and tokenizer). Usage follows
// Anthropic's accounting: input_tokens + cache_creation_input_tokens + cache_read_input_tokens is the whole
// prompt; cache_read is what the prompt cache really supplied; with `cache_control` breakpoints the rest of
// the prompt is kept cached ahead of unmarked prompts and is reported as cache_creation. Errors leave in
// Anthropic's envelope (the route's `errors: "anthropic"`, src/http/anthropic_errors.ts).
import type { ChatEngine, ChatFinishReason, ChatJob } from "../engines/types.ts";
import { checkJob } from "../chat/pipeline.ts";
import { readJson } from "../http/body.ts";
import { anthropicErrorBody, toAnthropicError } from "../http/anthropic_errors.ts";
import { sseResponse } from "../http/sse.ts";
import { CountTokensRequest, CreateMessageRequest } from "../protocol/messages.ts";
import { parseRequest } from "../protocol/validate.ts";
import type { ApiContext } from "./context.ts";
import { admitted, type ChoiceEvent, type JobRun, jobRun, samplingOf } from "./chat_run.ts";
import { type FieldPolicy, reportIgnored } from "./ignored.ts";
import { conversationOf, hasCacheBreakpoints, thinkingSwitch, toolPlanOf } from "./messages_input.ts";
import { anthropicId, MessageContent, type MessageEvent } from "./messages_output.ts";

type Body = CreateMessageRequest;

const TOOL_KEYS = new Set(["type", "name", "description", "input_schema", "cache_control"]);
/** The keys each content block type has that the route reads. */
const BLOCK_KEYS: Record<string, Set<string>> = {
  text: new Set(["type", "text", "cache_control"]),
  tool_use: new Set(["type", "id", "name", "input", "cache_control"]),
  tool_result: new Set(["type", "tool_use_id", "content", "is_error", "cache_control"]),
  thinking: new Set(["type", "thinking", "signature"]),
  redacted_thinking: new Set(["type", "data"]),
};

const OUTPUT_KEYS = new Set(["effort", "format"]);
const METADATA_KEYS = new Set(["user_id"]);

type Obj = Record<string, unknown>;

/** Unknown keys of one object (a tool, a block), and a cache_control `ttl` (the cache keeps no time). */
function unknownKeys(o: Obj, known: ReadonlySet<string> | undefined, at: string, out: string[]): void {
  for (const [k, v] of Object.entries(o)) if (known && !known.has(k) && v != null) out.push(`${at}.${k}`);
  if ((o.cache_control as Obj | null | undefined)?.ttl != null) out.push(`${at}.cache_control.ttl`);
}

/** Nested fields the route does not act on: unknown keys of tools, content blocks, output_config, metadata. */
function nestedIgnored(body: Obj): string[] {
  const out: string[] = [];
  const list = (v: unknown) => (Array.isArray(v) ? v as Obj[] : []);
  list(body.tools).forEach((t, i) => unknownKeys(t, TOOL_KEYS, `tools[${i}]`, out));
  list(body.system).forEach((b, i) => unknownKeys(b, BLOCK_KEYS.text, `system[${i}]`, out));
  list(body.messages).forEach((m, i) =>
    list(m.content).forEach((b, j) =>
      unknownKeys(b, BLOCK_KEYS[String(b.type)], `messages[${i}].content[${j}]`, out)
    )
  );
  unknownKeys((body.output_config ?? {}) as Obj, OUTPUT_KEYS, "output_config", out);
  unknownKeys((body.metadata ?? {}) as Obj, METADATA_KEYS, "metadata", out);
  return out;
}

const PROMPT_FIELDS = ["model", "messages", "system", "tools", "tool_choice", "thinking", "output_config"];

/** What POST /v1/messages acts on; `context_management`, `service_tier`, `container`,
 * `mcp_servers`, ... are accepted and reported in X-Ignored-Params (refused under --strict). */
export const MESSAGE_FIELDS: FieldPolicy = {
  honoured: new Set([
    ...PROMPT_FIELDS,
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "stream",
    "metadata",
  ]),
  nested: nestedIgnored,
};

export const COUNT_TOKENS_FIELDS: FieldPolicy = { honoured: new Set(PROMPT_FIELDS), nested: nestedIgnored };

function jobOf(body: Body): ChatJob {
  return {
    messages: conversationOf(body),
    tools: toolPlanOf(body),
    // Anthropic's structured outputs: the reply is a JSON document of the schema (constrained decoding).
    responseFormat: body.output_config?.format
      ? {
        type: "json_schema",
        name: "output",
        schema: body.output_config.format.schema,
        strict: false,
        param: "output_config.format.schema",
      }
      : null,
    n: 1,
    maxTokens: body.max_tokens,
    // Anthropic's clients send the model's whole output limit; a smaller window ends with
    // model_context_window_exceeded instead of a 400, as Anthropic's newer models do.
    maxTokensFit: true,
    ...samplingOf({
      temperature: body.temperature,
      top_p: body.top_p,
      top_k: body.top_k,
      stop: body.stop_sequences,
    }),
    logprobs: null,
    keepCache: hasCacheBreakpoints(body),
    // An effort level goes to the template's reasoning_effort switch (reported when it has none).
    ...(body.output_config?.effort ? { reasoningEffort: body.output_config.effort } : {}),
    ...thinkingSwitch(body.thinking),
    ...(body.thinking?.type === "enabled" ? { thinkingBudget: body.thinking.budget_tokens } : {}),
  };
}

export async function handleCreateMessage(req: Request, ctx: ApiContext): Promise<Response> {
  const started = performance.now();
  const body = parseRequest(CreateMessageRequest, await readJson(req, ctx.jsonLimits));
  reportIgnored(req, ctx, body, MESSAGE_FIELDS);
  if (body.metadata?.user_id) ctx.note({ user: body.metadata.user_id });
  const entry = ctx.registry.resolve(body.model, "chat");
  const job = jobOf(body);
  checkJob(job, ctx.log);
  const engine = await ctx.registry.engine<ChatEngine>(entry, ctx.signal, ctx.defer);
  const state = new MessageState(body, job, engine.contextLength);
  const run = jobRun(req, { ctx, entry, engine, started, job }, "output_config.effort");
  if (body.stream) {
    return await sseResponse(streamEvents(run, state), {
      done: false,
      named: true,
      log: ctx.log,
      errorFrame: (err) => anthropicErrorBody(toAnthropicError(err)),
    });
  }
  const content = new MessageContent({ omitThinking: state.omitThinking });
  for await (const ev of admitted(run, (p) => state.prompt(p))) {
    if (ev.type === "delta") content.push(ev.delta);
    else if (ev.type === "finish") state.finish(ev);
  }
  content.end();
  return Response.json(state.message(content.blocks, true));
}

type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "model_context_window_exceeded";

function stopReasonOf(
  reason: ChatFinishReason,
  stopSequence: string | undefined,
  windowFull: boolean,
): StopReason {
  if (reason === "tool_calls") return "tool_use";
  if (reason === "length") return windowFull ? "model_context_window_exceeded" : "max_tokens";
  return stopSequence !== undefined ? "stop_sequence" : "end_turn";
}

/** What the message object says about its request, and the figures the generation reports. */
class MessageState {
  readonly id = anthropicId("msg_");
  promptTokens = 0;
  cachedTokens = 0;
  outputTokens = 0;
  stopReason: StopReason | null = null;
  stopSequence: string | null = null;
  readonly keepCache: boolean;
  readonly omitThinking: boolean;

  constructor(readonly body: Body, job: ChatJob, readonly contextLength: number) {
    this.keepCache = job.keepCache === true;
    const t = body.thinking;
    this.omitThinking = (t?.type === "enabled" || t?.type === "adaptive") && t.display === "omitted";
  }

  prompt(p: { promptTokens: number; cachedTokens: number }): void {
    this.promptTokens = p.promptTokens;
    this.cachedTokens = p.cachedTokens;
  }

  finish(ev: Extract<ChoiceEvent, { type: "finish" }>): void {
    this.outputTokens += ev.completionTokens;
    // The reply stopped short of max_tokens because the context window was full.
    const windowFull = this.promptTokens + this.outputTokens >= this.contextLength &&
      this.outputTokens < this.body.max_tokens;
    this.stopReason = stopReasonOf(ev.reason, ev.stopSequence, windowFull);
    this.stopSequence = ev.stopSequence ?? null;
  }

  usage() {
    const creation = this.keepCache ? this.promptTokens - this.cachedTokens : 0;
    return {
      input_tokens: this.promptTokens - this.cachedTokens - creation,
      cache_creation_input_tokens: creation,
      cache_read_input_tokens: this.cachedTokens,
      output_tokens: this.outputTokens,
    };
  }

  /** The message object; `done` false: the message_start snapshot (no stop reason, nothing generated yet). */
  message(content: Record<string, unknown>[], done: boolean): Record<string, unknown> {
    return {
      id: this.id,
      type: "message",
      role: "assistant",
      model: this.body.model,
      content,
      stop_reason: done ? this.stopReason : null,
      stop_sequence: done ? this.stopSequence : null,
      usage: { ...this.usage(), service_tier: "standard" },
    };
  }
}

/**
 * The named event stream. The first choice event is pulled before message_start is written, so a request
 * refused by the model (context window, template) still gets its real HTTP status.
 */
async function* streamEvents(run: JobRun, state: MessageState): AsyncGenerator<MessageEvent> {
  const it = admitted(run, (p) => state.prompt(p))[Symbol.asyncIterator]();
  try {
    let next = await it.next();
    yield { type: "message_start", message: state.message([], false) };
    const content = new MessageContent({ omitThinking: state.omitThinking });
    let pinged = false;
    for (; !next.done; next = await it.next()) {
      const ev = next.value;
      if (ev.type === "finish") state.finish(ev);
      if (ev.type !== "delta") continue;
      for (const e of content.push(ev.delta)) {
        yield e;
        if (!pinged && e.type === "content_block_start") pinged = true, yield { type: "ping" };
      }
    }
    yield* content.end();
    yield {
      type: "message_delta",
      delta: { stop_reason: state.stopReason, stop_sequence: state.stopSequence },
      usage: state.usage(),
    };
    yield { type: "message_stop" };
  } finally {
    // The client went away (or the stream ended): the generation stops and its queue slot is freed.
    await it.return?.(undefined);
  }
}

export async function handleCountTokens(req: Request, ctx: ApiContext): Promise<Response> {
  const body = parseRequest(CountTokensRequest, await readJson(req, ctx.jsonLimits));
  reportIgnored(req, ctx, body, COUNT_TOKENS_FIELDS);
  const entry = ctx.registry.resolve(body.model, "chat");
  const job = jobOf({ ...body, max_tokens: 1 } as Body);
  checkJob(job, ctx.log);
  const engine = await ctx.registry.engine<ChatEngine>(entry, ctx.signal, ctx.defer);
  return Response.json({ input_tokens: await engine.countTokens(job, ctx.signal) });
}
