// Owns POST /v1/chat/completions: the wire request -> a native ChatJob (messages, tool plan, response format,
// sampling) -> the model's FIFO queue -> the chat engine (the pipeline of src/chat/, computing in the model's
// worker) -> OpenAI's chat.completion object, or chat.completion.chunk events over SSE. The queue slot is
// held for the whole generation (a stream included) and released on completion, error or client disconnect.
// Everything between the job and the events (prompt, budget, constraints, tool parsing) is the pipeline's.
import type {
  ChatDelta,
  ChatEngine,
  ChatFinishReason,
  ChatJob,
  ChatMessage,
  ChatResponseFormat,
  ChatTokenLogprob,
  ChatToolCall,
} from "../engines/types.ts";
import { checkJob } from "../chat/pipeline.ts";
import { readJson } from "../http/body.ts";
import { sseResponse } from "../http/sse.ts";
import { ChatCompletionRequest, type ChatRequestContent, type ChatRequestMessage } from "../protocol/chat.ts";
import type { ResponseFormat } from "../protocol/chat_tools.ts";
import { parseRequest } from "../protocol/validate.ts";
import type { ApiContext } from "./context.ts";
import { planTools } from "./chat_tools.ts";
import { admitted, fingerprintOf, type JobRun, jobRun, samplingOf, thinkingOf } from "./chat_run.ts";
import { randomId } from "../ids.ts";
import { type FieldPolicy, only, reportIgnored } from "./ignored.ts";

/** What this route acts on (src/api/ignored.ts): `user`, `metadata`, `store: true`, `service_tier`,
 * `prediction`, `audio`, `web_search_options`, `verbosity`, `prompt_cache_key`, ... are accepted and reported. */
export const CHAT_FIELDS: FieldPolicy = {
  honoured: new Set([
    "model",
    "messages",
    "temperature",
    "top_p",
    "n",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "stream",
    "stream_options",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "functions",
    "function_call",
    "response_format",
    "reasoning_effort",
    "top_k",
    "min_tokens",
    "ignore_eos",
  ]),
  neutral: { modalities: only.textModalities, store: only.isFalse },
};

export async function handleChatCompletions(req: Request, ctx: ApiContext): Promise<Response> {
  const started = performance.now();
  const body = parseRequest(ChatCompletionRequest, await readJson(req, ctx.jsonLimits));
  reportIgnored(req, ctx, body, CHAT_FIELDS);
  const entry = ctx.registry.resolve(body.model, "chat");
  const tools = planTools(body);
  const job: ChatJob = {
    messages: body.messages.map(toMessage),
    tools,
    responseFormat: responseFormatOf(body.response_format),
    n: body.n ?? 1,
    maxTokens: requestedTokens(body),
    ...samplingOf(body),
    logprobs: body.logprobs ? body.top_logprobs ?? 0 : null,
    ...thinkingOf(body.reasoning_effort),
  };
  // Checked before the model is loaded: a bad schema is a 400 whatever the model.
  checkJob(job, ctx.log);
  const engine = await ctx.registry.engine<ChatEngine>(entry, ctx.signal, ctx.defer);
  const reply: Reply = {
    id: randomId("chatcmpl-", 29),
    created: Math.floor(Date.now() / 1000),
    model: entry.id,
    fingerprint: fingerprintOf(engine),
    promptTokens: 0,
    cachedTokens: 0,
    legacyFunctions: tools.legacy,
  };
  const run: Run = { ...jobRun(req, { ctx, entry, engine, started, job }, "reasoning_effort"), reply };
  if (body.stream) {
    return await sseResponse(streamChunks(run, body.stream_options?.include_usage === true), {
      done: true,
      log: ctx.log,
    });
  }
  return Response.json(await complete(run));
}

/** response_format in native terms (text is no constraint). */
function responseFormatOf(format: ResponseFormat | undefined): ChatResponseFormat | null {
  if (!format || format.type === "text") return null;
  if (format.type === "json_object") return { type: "json_object" };
  const { name, schema, strict } = format.json_schema;
  return { type: "json_schema", name, schema: schema ?? {}, strict: strict === true };
}

/** The smaller of max_tokens and max_completion_tokens; null when neither is set (the context decides). */
function requestedTokens(body: { max_tokens?: number | null; max_completion_tokens?: number | null }) {
  const asked = [body.max_tokens, body.max_completion_tokens].filter((v): v is number => v != null);
  return asked.length ? Math.min(...asked) : null;
}

interface Reply {
  id: string;
  created: number;
  model: string;
  fingerprint: string;
  /** Learned from the pipeline's `prompt` event. */
  promptTokens: number;
  cachedTokens: number;
  /** Answer tool calls as the deprecated `function_call` (the request used `functions`). */
  legacyFunctions: boolean;
}

interface Run extends JobRun {
  reply: Reply;
}

function text(content: ChatRequestContent | null | undefined): string | null {
  if (content == null) return null;
  if (typeof content === "string") return content;
  return content.map((p) =>
    String((p as Record<string, unknown>).text ?? (p as Record<string, unknown>).refusal)
  )
    .join("");
}

/** Wire message -> engine message: developer is system; the deprecated function role is a tool result. */
function toMessage(m: ChatRequestMessage): ChatMessage {
  const role = m.role === "developer" ? "system" : m.role === "function" ? "tool" : m.role;
  const out: ChatMessage = { role, content: text(m.content) };
  if (m.name !== undefined) out.name = m.name;
  const calls: ChatToolCall[] = (m.tool_calls ?? []).map((c) => ({
    id: c.id,
    name: c.function.name,
    arguments: c.function.arguments,
  }));
  if (m.function_call) {
    calls.push({ id: "call_0", name: m.function_call.name, arguments: m.function_call.arguments });
  }
  if (calls.length) out.toolCalls = calls;
  if (m.tool_call_id !== undefined) out.toolCallId = m.tool_call_id;
  return out;
}

// ------------------------------------------------------------------------------------------- wire shapes

function wireLogprobs(lps: ChatTokenLogprob[]) {
  return lps.map((lp) => ({
    token: lp.token,
    logprob: lp.logprob,
    bytes: lp.bytes,
    top_logprobs: lp.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
}

function wireToolCalls(delta: ChatDelta) {
  return delta.toolCalls?.map((c) => ({
    index: c.index,
    ...(c.id !== undefined ? { id: c.id, type: "function" } : {}),
    function: { ...(c.name !== undefined ? { name: c.name } : {}), arguments: c.arguments ?? "" },
  }));
}

/** A streamed call as the deprecated `function_call` delta (one call at most: no index, no id). */
function wireFunctionCall(delta: ChatDelta) {
  const c = delta.toolCalls![0];
  return { ...(c.name !== undefined ? { name: c.name } : {}), arguments: c.arguments ?? "" };
}

/** OpenAI answers requests that used `functions` with finish_reason "function_call". */
function wireFinish(reason: ChatFinishReason, legacy: boolean): string {
  return legacy && reason === "tool_calls" ? "function_call" : reason;
}

function usage(reply: Reply, completionTokens: number, reasoningTokens: number) {
  return {
    prompt_tokens: reply.promptTokens,
    completion_tokens: completionTokens,
    total_tokens: reply.promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: reply.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

interface ChoiceState {
  content: string[];
  reasoning: string[];
  toolCalls: Map<number, { id: string; name: string; arguments: string }>;
  logprobs: ChatTokenLogprob[] | null;
  finish: ChatFinishReason;
}

/** The non-streamed answer: every choice collected, then one chat.completion object. */
async function complete(run: Run) {
  const choices: ChoiceState[] = [];
  let completionTokens = 0;
  let reasoningTokens = 0;
  for await (const ev of admitted(run, (p) => Object.assign(run.reply, p))) {
    if (ev.type === "start") {
      choices[ev.choice] = {
        content: [],
        reasoning: [],
        toolCalls: new Map(),
        logprobs: run.job.logprobs !== null ? [] : null,
        finish: "stop",
      };
      continue;
    }
    const c = choices[ev.choice];
    if (ev.type === "finish") {
      c.finish = ev.reason;
      completionTokens += ev.completionTokens;
      reasoningTokens += ev.reasoningTokens;
      continue;
    }
    if (ev.delta.content) c.content.push(ev.delta.content);
    if (ev.delta.reasoning) c.reasoning.push(ev.delta.reasoning);
    for (const t of ev.delta.toolCalls ?? []) {
      const call = c.toolCalls.get(t.index) ?? { id: "", name: "", arguments: "" };
      call.id ||= t.id ?? "";
      call.name += t.name ?? "";
      call.arguments += t.arguments ?? "";
      c.toolCalls.set(t.index, call);
    }
    if (ev.logprobs && c.logprobs) c.logprobs.push(...ev.logprobs);
  }
  const { reply } = run;
  return {
    id: reply.id,
    object: "chat.completion",
    created: reply.created,
    model: reply.model,
    system_fingerprint: reply.fingerprint,
    choices: choices.map((c, index) => {
      const content = c.content.join("");
      const calls = [...c.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, t]) => ({
        id: t.id,
        type: "function",
        function: { name: t.name, arguments: t.arguments || "{}" },
      }));
      const legacy = reply.legacyFunctions;
      return {
        index,
        message: {
          role: "assistant",
          content: calls.length && !content ? null : content,
          refusal: null,
          ...(c.reasoning.length ? { reasoning_content: c.reasoning.join("") } : {}),
          ...(calls.length ? legacy ? { function_call: calls[0].function } : { tool_calls: calls } : {}),
          annotations: [],
        },
        logprobs: c.logprobs ? { content: wireLogprobs(c.logprobs), refusal: null } : null,
        finish_reason: wireFinish(c.finish, legacy),
      };
    }),
    usage: usage(reply, completionTokens, reasoningTokens),
    service_tier: "default",
  };
}

/**
 * chat.completion.chunk events. Content chunks, one per token, are written as pre-serialized JSON around the
 * only part that changes (the text), so the hot path does no object building or full JSON encoding.
 */
async function* streamChunks(run: Run, includeUsage: boolean): AsyncGenerator<unknown> {
  const { reply } = run;
  const head =
    `{"id":${JSON.stringify(reply.id)},"object":"chat.completion.chunk","created":${reply.created},` +
    `"model":${JSON.stringify(reply.model)},"system_fingerprint":${JSON.stringify(reply.fingerprint)},` +
    `"choices":[{"index":`;
  const tail = `,"finish_reason":null}],"usage":null}`;
  const chunk = (choice: Record<string, unknown>, usageValue: unknown = null) => ({
    id: reply.id,
    object: "chat.completion.chunk",
    created: reply.created,
    model: reply.model,
    system_fingerprint: reply.fingerprint,
    choices: [choice],
    usage: usageValue,
  });
  let completionTokens = 0;
  let reasoningTokens = 0;
  for await (const ev of admitted(run, (p) => Object.assign(run.reply, p))) {
    switch (ev.type) {
      case "start":
        yield chunk({
          index: ev.choice,
          delta: { role: "assistant", content: "", refusal: null },
          logprobs: null,
          finish_reason: null,
        });
        break;
      case "delta":
        if (
          ev.delta.toolCalls === undefined && ev.delta.content !== undefined &&
          ev.delta.reasoning === undefined &&
          ev.logprobs === null
        ) {
          yield `${head}${ev.choice},"delta":{"content":${
            JSON.stringify(ev.delta.content)
          }},"logprobs":null${tail}`;
        } else {
          yield chunk({
            index: ev.choice,
            delta: {
              ...(ev.delta.reasoning !== undefined ? { reasoning_content: ev.delta.reasoning } : {}),
              ...(ev.delta.content !== undefined ? { content: ev.delta.content } : {}),
              ...(ev.delta.toolCalls
                ? reply.legacyFunctions
                  ? { function_call: wireFunctionCall(ev.delta) }
                  : { tool_calls: wireToolCalls(ev.delta) }
                : {}),
            },
            logprobs: ev.logprobs ? { content: wireLogprobs(ev.logprobs), refusal: null } : null,
            finish_reason: null,
          });
        }
        break;
      case "finish":
        completionTokens += ev.completionTokens;
        reasoningTokens += ev.reasoningTokens;
        yield chunk({
          index: ev.choice,
          delta: {},
          logprobs: null,
          finish_reason: wireFinish(ev.reason, reply.legacyFunctions),
        });
        break;
    }
  }
  if (includeUsage) {
    yield { ...chunk({}), choices: [], usage: usage(reply, completionTokens, reasoningTokens) };
  }
}
