// Owns the legacy POST /v1/completions: each prompt (a string, or token ids) becomes a native job with a raw
// prompt (no chat template; `suffix` asks for fill-in-the-middle) run through the same chat pipeline, `n`
// choices per prompt indexed prompt by prompt as OpenAI does; the answer is a text_completion object, or
// text_completion chunks over SSE then [DONE]. `echo` puts the prompt before the text, and with `logprobs`
// the prompt tokens' logprobs first (the first token has none); the legacy logprobs object's text_offset
// counts characters of the returned text.
import type { ChatEngine, ChatFinishReason, ChatJob, ChatTokenLogprob } from "../engines/types.ts";
import { checkJob } from "../chat/pipeline.ts";
import { readJson } from "../http/body.ts";
import { ApiError } from "../http/errors.ts";
import { sseResponse } from "../http/sse.ts";
import { CompletionRequest } from "../protocol/completions.ts";
import { parseRequest } from "../protocol/validate.ts";
import { type FieldPolicy, reportIgnored } from "./ignored.ts";
import { randomId } from "../ids.ts";
import type { ApiContext } from "./context.ts";
import { planTools } from "./chat_tools.ts";
import { admitted, fingerprintOf, type JobRun, type PromptEvent, samplingOf } from "./chat_run.ts";

/** OpenAI's default for this endpoint. */
const DEFAULT_MAX_TOKENS = 16;

/** What this route acts on (src/api/ignored.ts); `user` and anything else is accepted and reported. */
export const COMPLETION_FIELDS: FieldPolicy = {
  honoured: new Set([
    "model",
    "prompt",
    "suffix",
    "max_tokens",
    "temperature",
    "top_p",
    "n",
    "best_of",
    "stream",
    "stream_options",
    "logprobs",
    "echo",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "seed",
    "top_k",
    "min_tokens",
    "ignore_eos",
  ]),
};

export async function handleCompletions(req: Request, ctx: ApiContext): Promise<Response> {
  const started = performance.now();
  const body = parseRequest(CompletionRequest, await readJson(req, ctx.jsonLimits));
  reportIgnored(req, ctx, body, COMPLETION_FIELDS);
  const entry = ctx.registry.resolve(body.model, "chat");
  const prompts = promptsOf(body.prompt);
  const n = body.n ?? 1;
  const base: Omit<ChatJob, "prompt"> = {
    messages: [],
    tools: planTools({}),
    responseFormat: null,
    n,
    maxTokens: body.max_tokens ?? DEFAULT_MAX_TOKENS,
    ...samplingOf(body),
    logprobs: body.logprobs ?? null,
    echo: body.echo === true,
  };
  const jobs: ChatJob[] = prompts.map((p) => ({
    ...base,
    prompt: typeof p === "string"
      ? { text: p, ...(body.suffix != null ? { suffix: body.suffix } : {}) }
      : { ids: p },
  }));
  if (body.suffix != null && prompts.some((p) => typeof p !== "string")) {
    // Fill-in-the-middle is built from text (prefix and suffix around the model's FIM tokens).
    throw ApiError.badRequest(
      "'suffix' needs a text prompt: a prompt given as token ids has no text to put before the suffix.",
      "suffix",
      "invalid_value",
    );
  }
  if (body.suffix != null && body.echo) {
    throw ApiError.badRequest("'echo' cannot be used together with 'suffix'.", "echo", "invalid_value");
  }
  checkJob(jobs[0], ctx.log);
  const engine = await ctx.registry.engine<ChatEngine>(entry, ctx.signal, ctx.defer);
  const reply: Reply = {
    id: randomId("cmpl-", 29),
    created: Math.floor(Date.now() / 1000),
    model: entry.id,
    fingerprint: fingerprintOf(engine),
  };
  const runs = jobs.map((job, i): PromptRun => ({
    ctx,
    entry,
    engine,
    started,
    job,
    prompt: prompts[i],
    firstIndex: i * n,
  }));
  if (body.stream) {
    return await sseResponse(streamChunks(reply, runs, body.stream_options?.include_usage === true), {
      done: true,
      log: ctx.log,
    });
  }
  return Response.json(await complete(reply, runs));
}

function promptsOf(prompt: CompletionRequest["prompt"]): (string | number[])[] {
  if (typeof prompt === "string") return [prompt];
  if (prompt.every((p) => typeof p === "number")) return [prompt as number[]];
  return prompt as (string | number[])[];
}

interface Reply {
  id: string;
  created: number;
  model: string;
  fingerprint: string;
}

interface PromptRun extends JobRun {
  prompt: string | number[];
  /** Index of this prompt's first choice in the answer. */
  firstIndex: number;
}

interface Figures {
  promptTokens: number;
  completionTokens: number;
}

/** The legacy logprobs object, built token by token; text_offset counts characters of the choice's text. */
class LegacyLogprobs {
  readonly tokens: string[] = [];
  readonly token_logprobs: (number | null)[] = [];
  readonly top_logprobs: (Record<string, number> | null)[] = [];
  readonly text_offset: number[] = [];
  #offset = 0;

  add(lps: readonly (ChatTokenLogprob | null)[], text?: readonly string[]): void {
    lps.forEach((lp, i) => {
      const token = lp?.token ?? text?.[i] ?? "";
      this.tokens.push(token);
      this.token_logprobs.push(lp ? lp.logprob : null);
      this.top_logprobs.push(lp ? Object.fromEntries(lp.top.map((t) => [t.token, t.logprob])) : null);
      this.text_offset.push(this.#offset);
      this.#offset += token.length;
    });
  }

  /** The next entries' offset: where the text so far ends. */
  moveTo(offset: number): void {
    this.#offset = offset;
  }

  slice(from: number) {
    return {
      tokens: this.tokens.slice(from),
      token_logprobs: this.token_logprobs.slice(from),
      top_logprobs: this.top_logprobs.slice(from),
      text_offset: this.text_offset.slice(from),
    };
  }
}

interface ChoiceState {
  text: string;
  logprobs: LegacyLogprobs | null;
}

function wireFinish(reason: ChatFinishReason): string {
  return reason === "tool_calls" ? "stop" : reason;
}

/**
 * One prompt's choices as a stream of wire pieces: `echo` first (the prompt's text and logprobs), then each
 * choice's text deltas and its finish. Figures accumulate into `fig`.
 */
async function* promptEvents(
  run: PromptRun,
  fig: Figures,
): AsyncGenerator<
  | { kind: "text"; index: number; text: string; logprobs: LegacyLogprobs | null; from: number }
  | { kind: "finish"; index: number; reason: ChatFinishReason }
> {
  const { job } = run;
  let echo: PromptEvent["echo"];
  const states: ChoiceState[] = [];
  for await (
    const ev of admitted(run, (p) => {
      fig.promptTokens += p.promptTokens;
      echo = p.echo;
    })
  ) {
    const index = run.firstIndex + ev.choice;
    if (ev.type === "start") {
      const st: ChoiceState = { text: "", logprobs: job.logprobs !== null ? new LegacyLogprobs() : null };
      states[ev.choice] = st;
      if (echo) {
        // The prompt as the client gave it, when it was text; decoded from the ids otherwise.
        const text = typeof run.prompt === "string" ? run.prompt : echo.text;
        if (st.logprobs && echo.logprobs) st.logprobs.add(echo.logprobs, echo.tokens);
        st.text = text;
        st.logprobs?.moveTo(text.length);
        yield { kind: "text", index, text, logprobs: st.logprobs, from: 0 };
      }
      continue;
    }
    const st = states[ev.choice];
    if (ev.type === "finish") {
      fig.completionTokens += ev.completionTokens;
      yield { kind: "finish", index, reason: ev.reason };
      continue;
    }
    const text = ev.delta.content ?? "";
    const from = st.logprobs?.tokens.length ?? 0;
    if (st.logprobs && ev.logprobs) {
      st.logprobs.moveTo(st.text.length);
      st.logprobs.add(ev.logprobs);
    }
    st.text += text;
    yield { kind: "text", index, text, logprobs: st.logprobs, from };
  }
}

function usage(fig: Figures) {
  return {
    prompt_tokens: fig.promptTokens,
    completion_tokens: fig.completionTokens,
    total_tokens: fig.promptTokens + fig.completionTokens,
  };
}

async function complete(reply: Reply, runs: PromptRun[]) {
  const fig: Figures = { promptTokens: 0, completionTokens: 0 };
  const choices: { text: string; index: number; logprobs: unknown; finish_reason: string }[] = [];
  // Prompts run one after another, each holding the model's queue slot for its own choices.
  for (const run of runs) {
    for await (const ev of promptEvents(run, fig)) {
      const c = choices[ev.index] ??= { text: "", index: ev.index, logprobs: null, finish_reason: "stop" };
      if (ev.kind === "finish") c.finish_reason = wireFinish(ev.reason);
      else {
        c.text += ev.text;
        if (ev.logprobs) c.logprobs = ev.logprobs.slice(0);
      }
    }
  }
  return {
    id: reply.id,
    object: "text_completion",
    created: reply.created,
    model: reply.model,
    system_fingerprint: reply.fingerprint,
    choices,
    usage: usage(fig),
  };
}

async function* streamChunks(
  reply: Reply,
  runs: PromptRun[],
  includeUsage: boolean,
): AsyncGenerator<unknown> {
  const fig: Figures = { promptTokens: 0, completionTokens: 0 };
  const chunk = (choice: unknown) => ({
    id: reply.id,
    object: "text_completion",
    created: reply.created,
    model: reply.model,
    system_fingerprint: reply.fingerprint,
    choices: [choice],
    usage: null,
  });
  for (const run of runs) {
    for await (const ev of promptEvents(run, fig)) {
      if (ev.kind === "finish") {
        yield chunk({ text: "", index: ev.index, logprobs: null, finish_reason: wireFinish(ev.reason) });
      } else if (ev.text || (ev.logprobs && ev.logprobs.tokens.length > ev.from)) {
        yield chunk({
          text: ev.text,
          index: ev.index,
          logprobs: ev.logprobs ? ev.logprobs.slice(ev.from) : null,
          finish_reason: null,
        });
      }
    }
  }
  if (includeUsage) yield { ...chunk(null), choices: [], usage: usage(fig) };
}
