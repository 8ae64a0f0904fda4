// Owns the Responses API (issue 14): POST /v1/responses on the chat pipeline (input items -> a native
// ChatJob: instructions as the system turn, earlier turns from the store when previous_response_id is set,
// function tools and tool_choice planned as chat's, text.format as response_format, reasoning.effort as
// thinking), the response object or its typed SSE events, and the stored state: GET and DELETE
// /v1/responses/{id}, GET /v1/responses/{id}/input_items (a paginated list), POST
// /v1/responses/input_tokens (the prompt's size, counted by the model's own renderer without generating).
import type { ChatEngine, ChatJob, ChatMessage, ChatResponseFormat, ModelEntry } from "../engines/types.ts";
import { checkJob } from "../chat/pipeline.ts";
import { randomSeed } from "../chat/sampler.ts";
import { readJson } from "../http/body.ts";
import { ApiError, toApiError } from "../http/errors.ts";
import { sseResponse } from "../http/sse.ts";
import {
  CreateResponseRequest,
  InputTokensRequest,
  ListInputItemsQuery,
  type TextFormat,
} from "../protocol/responses.ts";
import { parseRequest } from "../protocol/validate.ts";
import { type FieldPolicy, only, reportFields, reportIgnored } from "./ignored.ts";
import { randomId } from "../ids.ts";
import type { StoredResponse } from "../store/mod.ts";
import type { ApiContext } from "./context.ts";
import { admitted, type ChoiceEvent, type JobRun, jobRun, thinkingOf } from "./chat_run.ts";
import { type OutputEvent, ResponseOutput } from "./response_output.ts";
import { itemsToMessages, normalizeInput, toolPlanOf } from "./response_input.ts";

type Body = CreateResponseRequest;

/** The one `include` value this route acts on. */
const LOGPROBS_INCLUDE = "message.output_text.logprobs";

/** Fields under `text` and `include` values the route does not act on (`text.verbosity` other than the
 * default, `include` entries such as `reasoning.encrypted_content`). */
function nestedIgnored(body: Record<string, unknown>): string[] {
  const out: string[] = [];
  const text = body.text as Record<string, unknown> | null | undefined;
  for (const [k, v] of Object.entries(text ?? {})) {
    if (k !== "format" && v != null && !(k === "verbosity" && v === "medium")) out.push(`text.${k}`);
  }
  const reasoning = body.reasoning as Record<string, unknown> | null | undefined;
  for (const [k, v] of Object.entries(reasoning ?? {})) {
    if (k !== "effort" && k !== "summary" && v != null) out.push(`reasoning.${k}`);
  }
  const include = Array.isArray(body.include) ? body.include : [];
  include.forEach((v, i) => v !== LOGPROBS_INCLUDE && out.push(`include[${i}]`));
  return out;
}

const PROMPT_FIELDS = [
  "model",
  "input",
  "instructions",
  "previous_response_id",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "text",
  "reasoning",
];

/** What POST /v1/responses acts on (src/api/ignored.ts); `user`, `safety_identifier` (echoed only),
 * `service_tier`, `prompt_cache_key`, `truncation: "auto"`, `max_tool_calls`, ... are accepted and reported. */
export const RESPONSE_FIELDS: FieldPolicy = {
  honoured: new Set([
    ...PROMPT_FIELDS,
    "max_output_tokens",
    "temperature",
    "top_p",
    "top_logprobs",
    "stream",
    "store",
    "metadata",
    "include",
  ]),
  neutral: { background: only.isFalse, truncation: (v) => v === "disabled" },
  nested: nestedIgnored,
};

/** What POST /v1/responses/input_tokens acts on: the fields that shape the prompt. */
export const INPUT_TOKENS_FIELDS: FieldPolicy = {
  honoured: new Set(PROMPT_FIELDS),
  neutral: { truncation: (v) => v === "disabled" },
  nested: nestedIgnored,
};

export async function handleCreateResponse(req: Request, ctx: ApiContext): Promise<Response> {
  const started = performance.now();
  const body = parseRequest(CreateResponseRequest, await readJson(req, ctx.jsonLimits));
  reportIgnored(req, ctx, body, RESPONSE_FIELDS);
  // --store-url=none keeps nothing: an explicit `store: true` is reported (a 400 under --strict), and the
  // response object says `store: false`.
  if (!ctx.store && body.store === true) reportFields(req, ctx, ["store"]);
  const entry = ctx.registry.resolve(body.model, "chat");
  const input = normalizeInput(body.input);
  const history = await historyOf(ctx, body.previous_response_id);
  const job = jobOf(body, [...history, ...itemsToMessages(input)]);
  checkJob(job, ctx.log);
  const engine = await ctx.registry.engine<ChatEngine>(entry, ctx.signal, ctx.defer);
  const state = new ResponseState(body, entry, input, ctx.store !== null);
  const run = jobRun(req, { ctx, entry, engine, started, job }, "reasoning.effort");
  if (body.stream) {
    return await sseResponse(streamEvents(run, state), { done: false, named: true, log: ctx.log });
  }
  const output = new ResponseOutput({ summary: state.body.reasoning?.summary != null });
  let status: "completed" | "incomplete" = "completed";
  for await (const ev of admitted(run, (p) => state.prompt(p))) {
    if (ev.type === "delta") output.push(ev.delta, ev.logprobs);
    else if (ev.type === "finish") status = state.finish(ev);
  }
  output.end(status);
  const response = state.object(status, output);
  await save(ctx, state, response);
  return Response.json(response);
}

/** The conversation so far: every earlier turn of the chain, oldest first (their instructions are not). */
async function historyOf(ctx: ApiContext, previous: string | null | undefined): Promise<ChatMessage[]> {
  if (!previous) return [];
  const chain: StoredResponse[] = [];
  for (let id: string | null = previous; id;) {
    const rec: StoredResponse | null = ctx.store ? await ctx.store.get(id) : null;
    if (!rec) {
      if (chain.length) break; // an older turn expired: the conversation starts where the store still has it
      throw ApiError.notFound(
        `Previous response with id '${previous}' not found.`,
        "previous_response_not_found",
        "previous_response_id",
      );
    }
    chain.unshift(rec);
    id = rec.previousResponseId;
  }
  return itemsToMessages(
    chain.flatMap((r) => [...r.input, ...(r.response.output as Record<string, unknown>[])]),
  );
}

function formatOf(format: TextFormat | undefined): ChatResponseFormat | null {
  if (!format || format.type === "text") return null;
  if (format.type === "json_object") return { type: "json_object" };
  return {
    type: "json_schema",
    name: format.name,
    schema: format.schema,
    strict: format.strict === true,
    param: "text.format.schema",
  };
}

function jobOf(body: Body, messages: ChatMessage[]): ChatJob {
  return {
    messages: body.instructions ? [{ role: "system", content: body.instructions }, ...messages] : messages,
    tools: toolPlanOf(body),
    responseFormat: formatOf(body.text?.format),
    n: 1,
    maxTokens: body.max_output_tokens ?? null,
    minTokens: 0,
    ignoreEos: false,
    stop: [],
    sampling: {
      ...(body.temperature != null ? { temperature: body.temperature } : {}),
      ...(body.top_p != null ? { topP: body.top_p } : {}),
      presencePenalty: 0,
      frequencyPenalty: 0,
      logitBias: {},
    },
    seed: randomSeed(),
    logprobs: includes(body, LOGPROBS_INCLUDE) ? body.top_logprobs ?? 0 : null,
    ...thinkingOf(body.reasoning?.effort),
  };
}

function includes(body: Body, what: string): boolean {
  const inc = (body as Record<string, unknown>).include;
  return Array.isArray(inc) && inc.includes(what);
}

/** What the response object says about its request, and the figures the generation reports. */
class ResponseState {
  readonly id = randomId("resp_", 32);
  readonly createdAt = Math.floor(Date.now() / 1000);
  inputTokens = 0;
  cachedTokens = 0;
  outputTokens = 0;
  reasoningTokens = 0;
  /** What sampling used (the model's defaults where the request set none), once the prompt was accepted. */
  sampling: { temperature: number; topP: number } | null = null;
  /** Whether the response is kept: asked for (the default) and a store exists. */
  readonly stored: boolean;

  constructor(
    readonly body: Body,
    readonly entry: ModelEntry,
    readonly input: Record<string, unknown>[],
    storeAvailable: boolean,
  ) {
    this.stored = body.store !== false && storeAvailable;
  }

  prompt(
    p: { promptTokens: number; cachedTokens: number; sampling?: { temperature: number; topP: number } },
  ) {
    this.inputTokens = p.promptTokens;
    this.cachedTokens = p.cachedTokens;
    this.sampling = p.sampling ?? null;
  }

  finish(
    ev: { reason: string; completionTokens: number; reasoningTokens: number },
  ): "completed" | "incomplete" {
    this.outputTokens += ev.completionTokens;
    this.reasoningTokens += ev.reasoningTokens;
    return ev.reason === "length" ? "incomplete" : "completed";
  }

  /** The response object; `output` null while it is still in progress (the created/in_progress snapshots). */
  object(
    status: "in_progress" | "completed" | "incomplete" | "failed",
    output: ResponseOutput | null,
    error: { code: string; message: string } | null = null,
  ): Record<string, unknown> {
    const b = this.body;
    const done = status === "completed" || status === "incomplete";
    return {
      id: this.id,
      object: "response",
      created_at: this.createdAt,
      status,
      background: false,
      completed_at: status === "completed" ? Math.floor(Date.now() / 1000) : null,
      error,
      incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
      instructions: b.instructions ?? null,
      max_output_tokens: b.max_output_tokens ?? null,
      max_tool_calls: null,
      model: this.entry.id,
      output: output?.items ?? [],
      parallel_tool_calls: b.parallel_tool_calls ?? true,
      previous_response_id: b.previous_response_id ?? null,
      prompt_cache_key: null,
      reasoning: { effort: b.reasoning?.effort ?? null, summary: b.reasoning?.summary ?? null },
      safety_identifier: b.safety_identifier ?? null,
      service_tier: "default",
      store: this.stored,
      temperature: b.temperature ?? this.sampling?.temperature ?? null,
      text: { format: b.text?.format ?? { type: "text" }, verbosity: b.text?.verbosity ?? "medium" },
      tool_choice: b.tool_choice ?? "auto",
      tools: (b.tools ?? []).map((t) => ({
        type: "function",
        name: t.name,
        description: t.description ?? null,
        parameters: t.parameters ?? null,
        strict: t.strict ?? null,
      })),
      top_logprobs: b.top_logprobs ?? 0,
      top_p: b.top_p ?? this.sampling?.topP ?? null,
      truncation: "disabled",
      usage: done
        ? {
          input_tokens: this.inputTokens,
          input_tokens_details: { cached_tokens: this.cachedTokens },
          output_tokens: this.outputTokens,
          output_tokens_details: { reasoning_tokens: this.reasoningTokens },
          total_tokens: this.inputTokens + this.outputTokens,
        }
        : null,
      user: b.user ?? null,
      metadata: b.metadata ?? {},
    };
  }
}

async function save(ctx: ApiContext, state: ResponseState, response: Record<string, unknown>): Promise<void> {
  if (!state.stored || !ctx.store) return;
  await ctx.store.put({
    id: state.id,
    createdAt: state.createdAt,
    previousResponseId: state.body.previous_response_id ?? null,
    input: state.input,
    response,
  });
}

/**
 * The typed event stream. The first choice event is pulled before response.created is written, so a
 * request refused by the model (context window, template) still gets its real HTTP status.
 */
async function* streamEvents(run: JobRun, state: ResponseState): AsyncGenerator<OutputEvent> {
  const it = admitted(run, (p) => state.prompt(p))[Symbol.asyncIterator]();
  try {
    yield* events(it, run, state);
  } finally {
    // The client went away (or the stream ended): the generation stops and its queue slot is freed.
    await it.return?.(undefined);
  }
}

async function* events(
  it: AsyncIterator<ChoiceEvent>,
  run: JobRun,
  state: ResponseState,
): AsyncGenerator<OutputEvent> {
  let seq = 0;
  const stamp = (e: OutputEvent) => ({ ...e, sequence_number: seq++ });
  let next = await it.next();
  const output = new ResponseOutput({ summary: state.body.reasoning?.summary != null });
  yield stamp({ type: "response.created", response: state.object("in_progress", null) });
  yield stamp({ type: "response.in_progress", response: state.object("in_progress", null) });
  let status: "completed" | "incomplete" = "completed";
  try {
    for (; !next.done; next = await it.next()) {
      const ev = next.value;
      if (ev.type === "delta") { for (const e of output.push(ev.delta, ev.logprobs)) yield stamp(e); }
      else if (ev.type === "finish") status = state.finish(ev);
    }
  } catch (err) {
    if (run.ctx.signal.aborted) throw err; // the client is gone: nothing to tell it
    const api = toApiError(err);
    if (api.status >= 500) run.ctx.log.error("response stream failed", { error: String(err) });
    const error = {
      code: api.code ?? (api.status >= 500 ? "server_error" : "invalid_request"),
      message: api.message,
    };
    yield stamp({ type: "response.failed", response: state.object("failed", output, error) });
    return;
  }
  for (const e of output.end(status)) yield stamp(e);
  const response = state.object(status, output);
  await save(run.ctx, state, response);
  yield stamp({ type: status === "completed" ? "response.completed" : "response.incomplete", response });
}

// ------------------------------------------------------------------------------------ stored state routes

async function stored(ctx: ApiContext): Promise<StoredResponse> {
  const id = ctx.params.id;
  const rec = ctx.store ? await ctx.store.get(id) : null;
  if (!rec) throw ApiError.notFound(`Response with id '${id}' not found.`, null, "response_id");
  return rec;
}

export async function handleGetResponse(_req: Request, ctx: ApiContext): Promise<Response> {
  return Response.json((await stored(ctx)).response);
}

export async function handleDeleteResponse(_req: Request, ctx: ApiContext): Promise<Response> {
  const id = ctx.params.id;
  if (!ctx.store || !(await ctx.store.delete(id))) {
    throw ApiError.notFound(`Response with id '${id}' not found.`, null, "response_id");
  }
  return Response.json({ id, object: "response", deleted: true });
}

export async function handleListInputItems(req: Request, ctx: ApiContext): Promise<Response> {
  const query = parseRequest(ListInputItemsQuery, Object.fromEntries(new URL(req.url).searchParams));
  const rec = await stored(ctx);
  const limit = query.limit ?? 20;
  let items = query.order === "asc" ? rec.input : [...rec.input].reverse();
  if (query.after !== undefined) {
    const at = items.findIndex((i) => i.id === query.after);
    if (at < 0) {
      throw ApiError.badRequest(`No input item with id '${query.after}' in this response.`, "after");
    }
    items = items.slice(at + 1);
  }
  const page = items.slice(0, limit);
  return Response.json({
    object: "list",
    data: page,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
    has_more: items.length > limit,
  });
}

export async function handleInputTokens(req: Request, ctx: ApiContext): Promise<Response> {
  const body = parseRequest(InputTokensRequest, await readJson(req, ctx.jsonLimits));
  reportIgnored(req, ctx, body, INPUT_TOKENS_FIELDS);
  const entry = ctx.registry.resolve(body.model, "chat");
  const history = await historyOf(ctx, body.previous_response_id);
  const job = jobOf(body as Body, [...history, ...itemsToMessages(normalizeInput(body.input))]);
  checkJob(job, ctx.log);
  const engine = await ctx.registry.engine<ChatEngine>(entry, ctx.signal, ctx.defer);
  const tokens = await engine.countTokens(job, ctx.signal);
  return Response.json({ object: "response.input_tokens", input_tokens: tokens });
}
