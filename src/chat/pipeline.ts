// Owns one chat generation from start to end, for any backend: the prompt (the model's chat template through
// the backend), the budget and context checks, the constraint and output parser a job's tools and
// response_format call for, then per choice the decode loop: logit bias, penalties, constraint mask,
// sampling, logprobs, stop sequences, UTF-8-safe incremental text and tool-call parsing, with seeds and
// cancellation between tokens. Choices (n > 1) fork the prefilled sequence. Backends only give logits for
// sequences (ChatBackend); every chat-like endpoint and the benchmarks run generations through here.
import { InvalidRequest } from "../errors.ts";
import type { Logger } from "../log.ts";
import type {
  ChatBackend,
  ChatDelta,
  ChatEvent,
  ChatFinishReason,
  ChatJob,
  ChatLogitsProcessor,
  ChatOutputParser,
  ChatSampling,
  ChatTokenLogprob,
  RunAhead,
  SequenceId,
} from "../engines/types.ts";
import { BudgetedConstraint, vocabIndexOf } from "./constraint.ts";
import { callOrResponseGrammar, checkTools, forcedCallGrammar, responseGrammar } from "./grammar.ts";
import { ChoiceOutput } from "./output.ts";
import { applyBiasAndPenalties, logprobsOf, Rng, Sampler, TokenCounts } from "./sampler.ts";
import { IncrementalDecoder, StopFilter } from "./text.ts";
import type { MarkerDecoder } from "./formats/wiring.ts";
import { HERMES, ToolOutputParser } from "./tools/mod.ts";
import { promptIds, promptParam } from "./prompt.ts";
import { ReasoningSplitter, ThinkingGate } from "./reasoning.ts";
import { detectFamily, type Family, FamilyOutputParser, isLegacy, reasoningTags } from "./formats/mod.ts";
import { bannedOpeners, markerDecoder, nativeLayout, parseContext } from "./formats/wiring.ts";

export interface RunOptions {
  signal?: AbortSignal;
  log?: Logger;
}

/**
 * What a job asks that can be checked without the model (schemas of response_format and strict tools), so a
 * bad schema is a 400 before any model is loaded or queued for. The pipeline checks it again where it runs.
 */
export function checkJob(job: ChatJob, log?: Logger): void {
  checkTools(job.tools.declared);
  if (!job.tools.forced) responseGrammar(job.responseFormat, log);
}

/** The plug-ins of one job: per-choice constraint and output parser factories. */
interface Plugins {
  processor?: (choice: number) => BudgetedConstraint;
  /**
   * Tokens a gated constraint keeps allowed before the output shows whether it thinks: the block's opening
   * token and a lone newline before it.
   */
  thinkOpenId?: number[];
  parser?: (choice: number) => ChatOutputParser;
  /** Tokens never sampled (tool_choice none: the family's call-opening tokens). */
  banned?: number[];
  /** A family reader reads the output (so its control-token markers are decoded as text for it). */
  reads?: boolean;
}

/**
 * The constraint and the parser that reads calls out of the output. A forced call is constrained (a format
 * then applies to the plain answer after the tool results, a later request), in the family's own layout where
 * the constraint can write it, else in Hermes' JSON layout read back by the Hermes reader; with tools offered
 * under auto and a response_format, the output is calls or the document, one grammar, and calls are read out
 * of it; with a response_format alone the reply is the JSON document and nothing in it is read as a call.
 * A family that frames every reply (Harmony's channels) is always read, tools or not.
 */
function plugins(
  backend: ChatBackend,
  job: ChatJob,
  maxTokens: number,
  thinkOpenId: number[] | undefined,
  family: Family,
  log?: Logger,
): Plugins {
  const { tools } = job;
  const native = nativeLayout(family, backend.chatTemplate);
  const format = native ?? HERMES;
  // Without a layout of its own the forced grammar writes Hermes' JSON, so Hermes' reader reads it back.
  const reader = (tools.forced || job.responseFormat) && !native ? null : family;
  const either = !tools.forced && job.responseFormat
    ? callOrResponseGrammar(tools, format, job.responseFormat, log)
    : null;
  const grammar = tools.forced
    ? forcedCallGrammar(tools, format)
    : either ?? responseGrammar(job.responseFormat, log);
  const parseCalls = tools.parse && (tools.forced !== null || either !== null || grammar === null);
  // Not for a raw prompt (legacy completions): its text is the model's own.
  const framed = !job.prompt && family.ownsReasoning === true && grammar === null;
  const out: Plugins = {};
  if (tools.maxCalls === 0 && tools.declared.length > 0) out.banned = bannedOpeners(backend, family);
  if (!grammar && !parseCalls && !framed) return out;
  out.reads = parseCalls || framed;
  const constraints: BudgetedConstraint[] = [];
  if (grammar) {
    const param = tools.forced ? "tool_choice" : "response_format";
    let index;
    try {
      index = vocabIndexOf(backend, family.markers);
    } catch (e) {
      throw new InvalidRequest(
        `The model \`${backend.entry.id}\` does not support constrained decoding: ${(e as Error).message}`,
        param,
        "unsupported_value",
      );
    }
    out.processor = (i) => constraints[i] = new BudgetedConstraint(grammar, index, maxTokens);
    out.thinkOpenId = thinkOpenId;
  }
  const ctx = parseContext(tools);
  const read = (): ChatOutputParser | null => {
    if (!parseCalls && !framed) return null;
    const f = reader ?? null;
    if (!f) return new ToolOutputParser(HERMES);
    return isLegacy(f) ? new ToolOutputParser(f.legacy) : new FamilyOutputParser(f, ctx);
  };
  out.parser = (i) =>
    new ChoiceOutput(read(), {
      maxCalls: tools.maxCalls,
      truncated: () => constraints[i]?.truncated ?? false,
    });
  return out;
}

/**
 * Tokens the completion may use: what the job asks, else whatever the context window leaves. A prompt that
 * leaves no room, or a job that asks for more than there is, is refused before anything runs.
 */
export function completionBudget(
  requested: number | null,
  promptTokens: number,
  contextLength: number,
  param = "messages",
  fit = false,
): number {
  const room = contextLength - promptTokens;
  // A ceiling, not a demand: as many as the context leaves, up to the request's figure.
  if (fit && requested !== null && room >= 1) requested = Math.min(requested, room);
  if (requested === null ? room < 1 : requested > room) {
    const total = promptTokens + (requested ?? 1);
    throw new InvalidRequest(
      `This model's maximum context length is ${contextLength} tokens. However, you requested ${total} tokens ` +
        `(${promptTokens} in the ${param}, ${
          requested ?? 1
        } in the completion). Please reduce the length of ` +
        `the ${param} or completion.`,
      param,
      "context_length_exceeded",
    );
  }
  return requested ?? room;
}

function logitBias(bias: Record<string, number>, vocabSize: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const [k, v] of Object.entries(bias)) {
    const id = Number(k);
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new InvalidRequest(
        `Invalid key in 'logit_bias': token id ${k} is outside the model's vocabulary (ids 0 to ${
          vocabSize - 1
        }).`,
        "logit_bias",
        "invalid_value",
      );
    }
    out.set(id, v);
  }
  return out;
}

/** The job's sampling with the model's defaults filled in. */
function samplingOf(backend: ChatBackend, job: ChatJob): ChatSampling {
  const s = job.sampling;
  return {
    temperature: s.temperature ?? backend.defaults.temperature,
    topP: s.topP ?? backend.defaults.topP,
    topK: s.topK === undefined ? backend.defaults.topK : Math.max(0, s.topK),
    presencePenalty: s.presencePenalty,
    frequencyPenalty: s.frequencyPenalty,
    logitBias: logitBias(s.logitBias, backend.vocabSize),
  };
}

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException("The generation was aborted.", "AbortError");
}

/** The job's prompt in tokens, as runChat renders it (POST /v1/responses/input_tokens). */
export function countPromptTokens(backend: ChatBackend, job: ChatJob): number {
  checkTools(job.tools.declared);
  return promptIds(backend, job).length;
}

/** Job fields this model cannot act on: an effort level for a template without `reasoning_effort`. */
function unusedFields(backend: ChatBackend, job: ChatJob): string[] {
  const knob = !job.prompt && /\breasoning_effort\b/.test(backend.chatTemplate ?? "");
  return job.reasoningEffort !== undefined && !knob ? ["reasoningEffort"] : [];
}

/** The token that is a lone newline, when the vocabulary has one. */
const newlines = new WeakMap<ChatBackend, number[]>();

function newlineToken(backend: ChatBackend): number[] {
  let ids = newlines.get(backend);
  if (!ids) newlines.set(backend, ids = newlineOf(backend));
  return ids;
}

function newlineOf(backend: ChatBackend): number[] {
  try {
    const ids = backend.encode("\n", false);
    return ids.length === 1 ? ids : [];
  } catch {
    return []; // a vocabulary that cannot write a newline alone
  }
}

/** Runs one chat job on a backend: the `prompt` event, then every choice's events in order. */
export async function* runChat(
  backend: ChatBackend,
  job: ChatJob,
  opts: RunOptions = {},
): AsyncGenerator<ChatEvent> {
  const { signal, log } = opts;
  checkTools(job.tools.declared);
  const ids = promptIds(backend, job);
  const maxTokens = completionBudget(
    job.maxTokens,
    ids.length,
    backend.contextLength,
    promptParam(job),
    job.maxTokensFit === true,
  );
  const sampling = samplingOf(backend, job);
  const unused = unusedFields(backend, job);
  const family = detectFamily(backend.chatTemplate);
  // Thinking blocks are read out of chat replies of models whose template has them (a family that frames
  // its reasoning itself reads it in its own reader).
  const tags = job.prompt || family.ownsReasoning ? null : reasoningTags(backend.chatTemplate);
  const think = tags
    ? {
      tags,
      open: backend.decode(ids.slice(-4)).trimEnd().endsWith(tags.open),
      openId: [backend.tokenId(tags.open), ...newlineToken(backend)].filter((x) =>
        x !== undefined
      ) as number[],
      closeId: backend.tokenId(tags.close),
    }
    : null;
  const plug = plugins(backend, job, maxTokens, think?.openId, family, log);
  // The family's markers (when its reader reads the output) and its reasoning tags are read as text even
  // where they are control tokens (Magistral's [THINK]); unread, a control token stays out of the text.
  const decode = markerDecoder(
    backend,
    [...(plug.reads ? family.markers : []), ...(tags ? [tags.open, tags.close] : [])],
  );
  checkAbort(signal);

  const base = backend.open({ keep: job.keepCache === true });
  try {
    const wantEcho = job.echo === true;
    const { logits, cachedTokens, promptLps } = wantEcho && job.logprobs !== null
      ? await prefillScored(backend, base, ids, job.logprobs, signal)
      : { ...(await backend.prefill(base, ids)), promptLps: null };
    yield {
      type: "prompt",
      promptTokens: ids.length,
      cachedTokens,
      sampling: { temperature: sampling.temperature, topP: sampling.topP },
      ...(unused.length ? { unused } : {}),
      ...(wantEcho
        ? {
          echo: {
            text: backend.decode(ids),
            // Token texts only go with logprobs (the legacy logprobs object lists them).
            tokens: promptLps ? ids.map((id) => backend.tokenText(id).text) : [],
            logprobs: promptLps,
          },
        }
        : {}),
    };
    // Kept pristine for every choice; each choice works on its own copy.
    const first = job.n > 1 ? logits.slice() : logits;
    const state = new DecodeState(backend, first.length, job.logprobs !== null);
    for (let choice = 0; choice < job.n; choice++) {
      const seq = choice === job.n - 1 ? base : backend.fork(base);
      const splitter = think ? new ReasoningSplitter(think.open, think.tags) : null;
      try {
        yield* decodeChoice(
          backend,
          seq,
          ids,
          first,
          choice,
          job,
          sampling,
          maxTokens,
          plug,
          state,
          splitter,
          think?.closeId,
          decode,
          signal,
        );
      } finally {
        if (seq !== base) backend.close(seq);
      }
    }
  } finally {
    backend.close(base);
  }
}

/**
 * Prefill one token at a time, so every prompt token gets the logprob the model gave it (echo with
 * logprobs). Slower than one prefill, and only taken when a request asks for these numbers.
 */
async function prefillScored(
  backend: ChatBackend,
  seq: SequenceId,
  ids: number[],
  top: number,
  signal: AbortSignal | undefined,
): Promise<{ logits: Float32Array; cachedTokens: number; promptLps: (ChatTokenLogprob | null)[] }> {
  const first = await backend.prefill(seq, ids.slice(0, 1));
  const lps: (ChatTokenLogprob | null)[] = [null];
  const scorer = new DecodeState(backend, first.logits.length, true);
  let logits = first.logits;
  for (let i = 1; i < ids.length; i++) {
    checkAbort(signal);
    lps.push(scorer.logprob(logits, ids[i], top));
    logits = await backend.step(seq, ids[i]);
  }
  return { logits, cachedTokens: first.cachedTokens, promptLps: lps };
}

/** Buffers reused by every choice of a job. */
class DecodeState {
  readonly work: Float32Array;
  readonly raw: Float32Array | null;
  readonly sampler: Sampler;
  readonly counts: TokenCounts;
  constructor(readonly backend: ChatBackend, vocab: number, logprobs: boolean) {
    this.work = new Float32Array(vocab);
    this.raw = logprobs ? new Float32Array(vocab) : null;
    this.sampler = new Sampler(vocab, backend.sampleKernel);
    this.counts = new TokenCounts(vocab);
  }

  logprob(raw: Float32Array, token: number, top: number): ChatTokenLogprob {
    const r = logprobsOf(raw, token, top);
    const t = this.backend.tokenText(token);
    return {
      token: t.text,
      bytes: t.bytes,
      logprob: r.logprob,
      top: r.top.map(({ id, logprob }) => {
        const a = this.backend.tokenText(id);
        return { token: a.text, bytes: a.bytes, logprob };
      }),
    };
  }
}

async function* decodeChoice(
  backend: ChatBackend,
  seq: SequenceId,
  promptIds: number[],
  first: Float32Array,
  choice: number,
  job: ChatJob,
  sampling: ChatSampling,
  maxTokens: number,
  plug: Plugins,
  st: DecodeState,
  splitter: ReasoningSplitter | null,
  closeId: number | undefined,
  decode: MarkerDecoder,
  signal: AbortSignal | undefined,
): AsyncGenerator<ChatEvent> {
  const { raw, sampler, counts } = st;
  const rng = new Rng(job.seed, choice);
  counts.reset();
  const constraint = plug.processor?.(choice);
  const processor: ChatLogitsProcessor | undefined = constraint && splitter
    ? new ThinkingGate(constraint, splitter, plug.thinkOpenId)
    : constraint;
  const parser = plug.parser?.(choice);
  const detok = new IncrementalDecoder(decode.decode, promptIds, decode.bytesOf);
  const stop = new StopFilter(job.stop);
  /** Logprob entries not yet attached to emitted text, with the text offset where each token began. */
  const pendingLp: { start: number; lp: ChatTokenLogprob }[] = [];
  let produced = 0;
  let emitted = 0;
  let generated = 0;
  let reasoningTokens = 0;
  let row: Float32Array = st.work;
  row.set(first);
  yield { type: "start", choice };
  let finish: ChatFinishReason | null = maxTokens === 0 ? "length" : null;
  /** The next model step, started as soon as this token was chosen (see below). */
  let next: Promise<Float32Array> | null = null;
  // Rows that need nothing but the sampler (no logprobs, constraint, bias, penalty, ban or thinking budget)
  // may be drawn by the backend on its own (ChatBackend.runAhead): the same draws, without this loop between
  // two decodes. Each token it drew is taken below as if sampled here; the EOS mask goes with it.
  const plain = backend.runAhead !== undefined && !raw && !processor && !plug.banned?.length &&
    sampling.logitBias.size === 0 && sampling.presencePenalty === 0 && sampling.frequencyPenalty === 0 &&
    !(splitter && job.thinkingBudget != null);
  let ahead: RunAhead | null = null;
  let aheadTaken = 0;
  /** A token the run ahead drew, to take at the loop's top. */
  let drawn: number | null = null;
  try {
    while (finish === null) {
      checkAbort(signal);
      let mustEnd = false;
      let token: number;
      if (drawn !== null) {
        token = drawn;
        drawn = null;
      } else {
        if (raw) raw.set(row);
        applyBiasAndPenalties(row, sampling, counts);
        // "end": the constraint allows only end-of-sequence; it wins over min_tokens and ignore_eos.
        mustEnd = processor?.process(row) === "end";
        if (!mustEnd && (job.ignoreEos || generated < job.minTokens)) {
          for (const id of backend.eosIds) row[id] = -Infinity;
        }
        if (plug.banned) { for (const id of plug.banned) row[id] = -Infinity; }
        // The thinking budget is spent: the block's closing token comes next (when it is one token).
        if (
          splitter?.phase === "thinking" && job.thinkingBudget != null &&
          reasoningTokens >= job.thinkingBudget
        ) {
          if (closeId !== undefined) row.fill(-Infinity), row[closeId] = 0;
        }
        token = sampler.sample(row, sampling, rng);
      }
      generated++;
      counts.add(token);
      processor?.accept(token);
      const isEos = backend.eosIds.has(token) && (mustEnd || !job.ignoreEos);
      const atLimit = generated >= maxTokens;
      // The model computes the next step while this token's text is worked out and its event delivered (the
      // worker posts it, the HTTP side writes it): only a stop sequence can make that step unneeded. A backend
      // whose steps compute on this thread gets the step after the event instead (see `stepsBlock`).
      if (!isEos && !atLimit && !backend.stepsBlock) next = backend.step(seq, token);
      // Every generated token gets its entry, so a reply has as many as completion_tokens in every finish case;
      // end-of-sequence is spelled as the tokenizer spells it (`<|im_end|>`), as in the top alternatives.
      if (raw) pendingLp.push({ start: produced, lp: st.logprob(raw, token, job.logprobs!) });
      let text = isEos ? "" : detok.push(token);
      if (isEos || atLimit) text += detok.flush();
      produced += text.length;
      let visible = stop.push(text);
      if (stop.stopped) finish = "stop";
      else if (isEos || atLimit) {
        visible += stop.end();
        finish = isEos ? "stop" : "length";
      }
      emitted += visible.length;
      let split: { reasoning: string; content: string } | null = null;
      if (splitter) {
        const before = splitter.phase;
        split = splitter.push(visible);
        if (finish) {
          const tail = splitter.end();
          split.reasoning += tail.reasoning;
          split.content += tail.content;
        }
        // A token of the block: read while thinking, or the one that opened or closed it.
        if (
          before === "thinking" || splitter.phase === "thinking" || (before === "start" && splitter.thought)
        ) {
          reasoningTokens++;
        }
      }
      if (visible || (split && (split.reasoning || split.content)) || (finish && pendingLp.length)) {
        const lps = raw ? takeLogprobs(pendingLp, finish ? Infinity : emitted) : null;
        const content = split ? split.content : visible;
        const deltas: ChatDelta[] = parser ? parser.push(content) : content ? [{ content }] : [];
        // A family that frames its own reasoning: a token whose text went to reasoning counts as one.
        if (!splitter && deltas.some((d) => d.reasoning)) reasoningTokens++;
        if (split?.reasoning) deltas.unshift({ reasoning: split.reasoning });
        if (deltas.length === 0 && lps?.length) deltas.push({ content: "" });
        for (let i = 0; i < deltas.length; i++) {
          yield {
            type: "delta",
            choice,
            delta: deltas[i],
            logprobs: i === 0 ? lps : null,
            tokens: generated,
          };
        }
      }
      if (finish !== null) break;
      if (plain && !ahead && !next) {
        ahead = backend.runAhead!(seq, token, {
          sampling,
          rng: rng.state,
          limit: maxTokens - generated,
          masked: job.ignoreEos ? maxTokens : job.minTokens - generated,
          stopOnEos: !job.ignoreEos,
        });
        aheadTaken = 0;
      }
      if (ahead) {
        drawn = await ahead.next();
        if (drawn !== null) {
          aheadTaken++;
          continue;
        }
        // Over (other work came): every token it drew was taken; the last one is fed as a step.
        ahead = null;
      }
      row = await (next ?? backend.step(seq, token));
      next = null;
    }
  } finally {
    // A step still running (a stop sequence ended the choice, or the client left) finishes before the
    // sequence can be closed under it; so does a run ahead, which then drops what this choice did not take.
    if (next) await (next as Promise<Float32Array>).catch(() => {});
    if (ahead) await ahead.end(aheadTaken);
  }
  if (parser) {
    for (const delta of parser.end()) {
      yield { type: "delta", choice, delta, logprobs: null, tokens: generated };
    }
    if (parser.finishReason) finish = parser.finishReason;
  }
  yield {
    type: "finish",
    choice,
    reason: finish!,
    completionTokens: generated,
    reasoningTokens,
    ...(finish === "stop" && stop.matched !== null ? { stopSequence: stop.matched } : {}),
  };
}

/** Logprob entries of tokens whose text starts before `upTo` (text emitted so far). */
function takeLogprobs(pending: { start: number; lp: ChatTokenLogprob }[], upTo: number): ChatTokenLogprob[] {
  let n = 0;
  while (n < pending.length && pending[n].start < upTo) n++;
  return pending.splice(0, n).map((p) => p.lp);
}
