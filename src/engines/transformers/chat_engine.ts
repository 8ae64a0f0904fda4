// Owns the chat engine on transformers.js: loading a causal LM (AutoTokenizer + AutoModelForCausalLM) on the
// process-wide runtime, rendering conversations through the model's own chat template, and its own
// generation loop: one prefill per request, then token-by-token decoding over the KV cache, with sampling,
// penalties, logprobs, stop sequences, UTF-8-safe streaming text and cancellation between tokens. Choices
// (n > 1) run one after another from the same prefill. Plug-in points for constrained decoding and output
// parsing (tool calls) are the options' logitsProcessor and outputParser.
import { ModelFilesMissing } from "../registry.ts";
import type {
  ChatDelta,
  ChatEngine,
  ChatEvent,
  ChatFinishReason,
  ChatGenerateOptions,
  ChatMessage,
  ChatPrompt,
  ChatTokenLogprob,
  ChatTool,
  LoadContext,
  ModelEntry,
} from "../types.ts";
import {
  downloadProgress,
  knownDtype,
  missingMessage,
  requiredChatFiles,
  resolveChatSource,
} from "./chat_files.ts";
import { applyBiasAndPenalties, logprobsOf, Rng, Sampler, TokenCounts } from "../../chat/sampler.ts";
import { IncrementalDecoder, StopFilter, TokenTexts } from "../../chat/text.ts";
import { type TransformersModule, type TransformersRuntime, transformersRuntime } from "./runtime.ts";

type Tokenizer = Awaited<ReturnType<TransformersModule["AutoTokenizer"]["from_pretrained"]>>;
type Model = Awaited<ReturnType<TransformersModule["AutoModelForCausalLM"]["from_pretrained"]>>;
type Tensor = InstanceType<TransformersModule["Tensor"]>;

interface OrtTensor {
  location: string;
  type: string;
  dims: readonly number[];
  data: ArrayLike<number>;
  getData(release?: boolean): Promise<ArrayLike<number>>;
  dispose(): void;
}

/** The chat template refused the conversation (e.g. a role the model doesn't support). */
export class ChatPromptError extends Error {
  override name = "ChatPromptError";
}

/** Output-name prefix -> input-name prefix of the cache, as transformers.js maps them (hybrid models too). */
const CACHE_RENAMES: [string, string][] = [
  ["present_ssm", "past_ssm"],
  ["present_conv", "past_conv"],
  ["present_recurrent", "past_recurrent"],
  ["present_compressor", "past_compressor"],
  ["present_indexer", "past_indexer"],
  ["present", "past_key_values"],
];

/** Models whose positions start at 1 (as transformers.js treats them). */
const ONE_BASED_POSITIONS = new Set(["paligemma", "gemma3_text", "gemma3"]);

type Cache = Record<string, Tensor>;

interface Parts {
  tf: TransformersModule;
  rt: TransformersRuntime;
  tokenizer: Tokenizer;
  model: Model;
  dtype: string;
}

export class TransformersChat implements ChatEngine {
  readonly backend: string;
  readonly contextLength: number;
  readonly defaults: { temperature: number; topP: number; topK: number };
  /** Logits width, learned from the warm-up run. */
  vocabSize = 0;
  readonly eosIds: ReadonlySet<number>;
  readonly tokenTexts: TokenTexts;
  readonly tokenizerJson: unknown;
  readonly chatTemplate: string | null;

  readonly #p: Parts;
  readonly #cacheNames: [string, string][];
  readonly #inputs: ReadonlySet<string>;
  readonly #positionBase: number;
  /** All-ones attention mask for any length up to the context; views of it are fed, never copies. */
  readonly #ones: BigInt64Array;
  readonly #keepOne: Tensor | null;
  readonly #decode: (ids: number[]) => string;

  constructor(readonly entry: ModelEntry, parts: Parts) {
    this.#p = parts;
    const { tokenizer, model, rt, dtype } = parts;
    const config = model.config as unknown as Record<string, unknown>;
    const gen = ((model as unknown as { generation_config?: Record<string, unknown> }).generation_config ??
      {}) as Record<string, unknown>;
    const session = sessionOf(model);
    this.#inputs = new Set(session.inputNames);
    this.#cacheNames = [];
    for (const name of session.outputNames) {
      const rename = CACHE_RENAMES.find(([from]) => name.startsWith(from));
      if (rename) this.#cacheNames.push([name, rename[1] + name.slice(rename[0].length)]);
    }
    this.contextLength = contextLengthOf(entry, config, tokenizer.model_max_length);
    this.#ones = new BigInt64Array(this.contextLength).fill(1n);
    this.#positionBase = ONE_BASED_POSITIONS.has(String(config.model_type)) ? 1 : 0;
    this.#keepOne = this.#inputs.has("num_logits_to_keep")
      ? new parts.tf.Tensor("int64", BigInt64Array.of(1n), [])
      : null;
    this.eosIds = new Set(
      [gen.eos_token_id, config.eos_token_id, tokenizer.eos_token_id].flat().filter(
        Number.isInteger,
      ) as number[],
    );
    // The model's own sampling defaults; a model that says do_sample: false decodes greedily unless asked.
    this.defaults = gen.do_sample === true
      ? {
        temperature: num(gen.temperature, 1),
        topP: num(gen.top_p, 1),
        topK: num(gen.top_k, 0),
      }
      : gen.do_sample === false
      ? { temperature: 0, topP: 1, topK: 0 }
      : { temperature: 1, topP: 1, topK: 0 };
    this.#decode = (ids) => ids.length ? tokenizer.decode(ids, { skip_special_tokens: true }) : "";
    const json = (tokenizer as unknown as { _tokenizerJSON?: { decoder?: unknown } })._tokenizerJSON;
    this.tokenizerJson = json;
    const template = (tokenizer as unknown as { chat_template?: unknown }).chat_template;
    this.chatTemplate = typeof template === "string"
      ? template
      : template && typeof template === "object"
      ? String(
        (template as Record<string, unknown>).tool_use ?? (template as Record<string, unknown>).default ?? "",
      )
      : null;
    const inner = (tokenizer as unknown as { _tokenizer: { id_to_token(id: number): string | undefined } })
      ._tokenizer;
    this.tokenTexts = new TokenTexts(
      (id) => inner.id_to_token(id),
      (id) => tokenizer.decode([id], { skip_special_tokens: false }),
      usesByteLevel(json?.decoder),
      new Set(tokenizer.all_special_ids as number[]),
    );
    this.backend = `${rt.backend} ${dtype}`;
  }

  prompt(messages: ChatMessage[], tools?: ChatTool[]): ChatPrompt {
    const conversation = messages.map(templateMessage);
    let ids: unknown;
    try {
      ids = this.#p.tokenizer.apply_chat_template(conversation as never, {
        tools: tools?.length ? tools.map(templateTool) : null,
        add_generation_prompt: true,
        tokenize: true,
        return_tensor: false,
        return_dict: false,
      });
    } catch (e) {
      throw new ChatPromptError(
        `The model's chat template cannot render these messages: ${(e as Error).message}`,
      );
    }
    return { ids: Array.from(ids as ArrayLike<number>, Number) };
  }

  /** Text of ids as the model's tokenizer decodes them (special tokens skipped). */
  decode(ids: number[]): string {
    return this.#decode(ids);
  }

  /** Generations in flight (the registry never unloads a busy engine). */
  #running = 0;

  busy(): boolean {
    return this.#running > 0;
  }

  async *generate(prompt: ChatPrompt, o: ChatGenerateOptions): AsyncGenerator<ChatEvent> {
    this.#running++;
    try {
      yield* this.#generate(prompt, o);
    } finally {
      this.#running--;
    }
  }

  async *#generate(prompt: ChatPrompt, o: ChatGenerateOptions): AsyncGenerator<ChatEvent> {
    const { tf } = this.#p;
    const signal = o.signal;
    const promptLength = prompt.ids.length;
    if (promptLength === 0) throw new Error("empty prompt");
    if (promptLength > this.contextLength) {
      throw new Error(
        `prompt of ${promptLength} tokens is longer than the context window (${this.contextLength})`,
      );
    }
    const maxTokens = Math.max(0, Math.min(o.maxTokens, this.contextLength - promptLength));
    checkAbort(signal);

    const positions = new BigInt64Array(promptLength);
    for (let i = 0; i < promptLength; i++) positions[i] = BigInt(i + this.#positionBase);
    const prefill = await this.#forward(
      {
        input_ids: new tf.Tensor("int64", BigInt64Array.from(prompt.ids, BigInt), [1, promptLength]),
        attention_mask: this.#mask(promptLength),
        position_ids: new tf.Tensor("int64", positions, [1, promptLength]),
      },
      null,
    );
    // Kept pristine for every choice; each choice works on its own copy.
    const firstRow = prefill.row.slice();
    const vocab = firstRow.length;
    const work = new Float32Array(vocab);
    const raw = o.logprobs !== null ? new Float32Array(vocab) : null;
    const sampler = new Sampler(vocab);
    const counts = new TokenCounts(vocab);
    // Reused for every decode step: one token id and its position.
    const stepId = new BigInt64Array(1);
    const stepPos = new BigInt64Array(1);
    const stepIdTensor = new tf.Tensor("int64", stepId, [1, 1]);
    const stepPosTensor = new tf.Tensor("int64", stepPos, [1, 1]);

    try {
      for (let choice = 0; choice < o.n; choice++) {
        const rng = new Rng(o.seed, choice);
        counts.reset();
        const processor = o.logitsProcessor?.(choice);
        const parser = o.outputParser?.(choice);
        const detok = new IncrementalDecoder(this.#decode, prompt.ids);
        const stop = new StopFilter(o.stop);
        /** Logprob entries not yet attached to emitted text, with the text offset where each token began. */
        const pendingLp: { start: number; lp: ChatTokenLogprob }[] = [];
        let produced = 0;
        let emitted = 0;
        let generated = 0;
        let cache = prefill.cache;
        let row: Float32Array = work;
        row.set(firstRow);
        yield { type: "start", choice };
        try {
          let finish: ChatFinishReason | null = maxTokens === 0 ? "length" : null;
          while (finish === null) {
            checkAbort(signal);
            if (raw) raw.set(row);
            applyBiasAndPenalties(row, o.sampling, counts);
            // "end": the constraint allows only end-of-sequence; it wins over min_tokens and ignore_eos.
            const mustEnd = processor?.process(row) === "end";
            if (!mustEnd && (o.ignoreEos || generated < o.minTokens)) {
              for (const id of this.eosIds) row[id] = -Infinity;
            }
            const token = sampler.sample(row, o.sampling, rng);
            generated++;
            counts.add(token);
            processor?.accept(token);
            const isEos = this.eosIds.has(token) && (mustEnd || !o.ignoreEos);
            if (raw && !isEos) {
              pendingLp.push({ start: produced, lp: this.#logprob(raw, token, o.logprobs!) });
            }
            let text = isEos ? "" : detok.push(token);
            const atLimit = generated >= maxTokens;
            if (isEos || atLimit) text += detok.flush();
            produced += text.length;
            let visible = stop.push(text);
            if (stop.stopped) finish = "stop";
            else if (isEos || atLimit) {
              visible += stop.end();
              finish = isEos ? "stop" : "length";
            }
            emitted += visible.length;
            if (visible || (finish && pendingLp.length)) {
              const lps = raw
                ? takeLogprobs(pendingLp, finish ? (stop.stopped ? emitted : Infinity) : emitted)
                : null;
              const deltas: ChatDelta[] = parser
                ? parser.push(visible)
                : visible
                ? [{ content: visible }]
                : [];
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
            // Feed the token back: one position further, attention over everything so far.
            const length = promptLength + generated;
            stepId[0] = BigInt(token);
            stepPos[0] = BigInt(length - 1 + this.#positionBase);
            const next = await this.#forward(
              { input_ids: stepIdTensor, attention_mask: this.#mask(length), position_ids: stepPosTensor },
              cache,
            );
            if (cache !== prefill.cache) disposeCache(cache);
            cache = next.cache;
            row = next.row;
          }
          if (parser) {
            for (const delta of parser.end()) {
              yield { type: "delta", choice, delta, logprobs: null, tokens: generated };
            }
            if (parser.finishReason) finish = parser.finishReason;
          }
          yield { type: "finish", choice, reason: finish!, completionTokens: generated };
        } finally {
          if (cache !== prefill.cache) disposeCache(cache);
        }
      }
    } finally {
      disposeCache(prefill.cache);
    }
  }

  #logprob(raw: Float32Array, token: number, top: number): ChatTokenLogprob {
    const r = logprobsOf(raw, token, top);
    const t = this.tokenTexts.get(token);
    return {
      token: t.text,
      bytes: t.bytes,
      logprob: r.logprob,
      top: r.top.map(({ id, logprob }) => {
        const a = this.tokenTexts.get(id);
        return { token: a.text, bytes: a.bytes, logprob };
      }),
    };
  }

  #mask(length: number): Tensor {
    return new this.#p.tf.Tensor("int64", this.#ones.subarray(0, length), [1, length]);
  }

  /** One model run; returns the last position's logits (float32) and the cache for the next run. */
  async #forward(
    feeds: Record<string, Tensor>,
    cache: Cache | null,
  ): Promise<{ row: Float32Array; cache: Cache }> {
    const inputs: Record<string, unknown> = feeds;
    if (cache) inputs.past_key_values = cache;
    if (this.#keepOne) inputs.num_logits_to_keep = this.#keepOne;
    const out = (await this.#p.model.forward(inputs)) as Record<string, Tensor>;
    const next: Cache = {};
    for (const [output, input] of this.#cacheNames) next[input] = out[output];
    const row = await lastRow(out.logits);
    return { row, cache: next };
  }

  /** A short run so the first request doesn't pay for graph initialisation. */
  async warmUp(): Promise<void> {
    const tf = this.#p.tf;
    const { row, cache } = await this.#forward({
      input_ids: new tf.Tensor("int64", BigInt64Array.of(0n), [1, 1]),
      attention_mask: this.#mask(1),
      position_ids: new tf.Tensor("int64", BigInt64Array.of(BigInt(this.#positionBase)), [1, 1]),
    }, null);
    this.vocabSize = row.length;
    disposeCache(cache);
  }

  async dispose(): Promise<void> {
    await this.#p.model.dispose();
  }
}

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException("The generation was aborted.", "AbortError");
}

/** Logprob entries of tokens whose text starts before `upTo` (text emitted so far). */
function takeLogprobs(pending: { start: number; lp: ChatTokenLogprob }[], upTo: number): ChatTokenLogprob[] {
  let n = 0;
  while (n < pending.length && pending[n].start < upTo) n++;
  return pending.splice(0, n).map((p) => p.lp);
}

function sessionOf(model: Model): { inputNames: string[]; outputNames: string[] } {
  const sessions =
    (model as unknown as { sessions: Record<string, { inputNames: string[]; outputNames: string[] }> })
      .sessions;
  const s = sessions.model ?? sessions.decoder_model_merged;
  if (!s) throw new Error("the model has no decoder session");
  return s;
}

function ortOf(t: Tensor): OrtTensor {
  return (t as unknown as { ort_tensor: OrtTensor }).ort_tensor;
}

/** The last position's logits as float32 (a view when they already are; fp16 is widened; GPU is read back). */
async function lastRow(logits: Tensor): Promise<Float32Array> {
  const ort = ortOf(logits);
  const dims = ort.dims;
  const width = dims[dims.length - 1];
  const data = ort.location === "cpu" ? ort.data : await ort.getData(true);
  const start = data.length - width;
  if (data instanceof Float32Array) return data.subarray(start);
  const out = new Float32Array(width);
  if (data instanceof Uint16Array) { for (let i = 0; i < width; i++) out[i] = halfToFloat(data[start + i]); }
  else for (let i = 0; i < width; i++) out[i] = Number(data[start + i]);
  return out;
}

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

/** Frees cache tensors that live on the GPU (CPU ones are garbage collected). */
function disposeCache(cache: Cache): void {
  for (const t of Object.values(cache)) {
    const ort = ortOf(t);
    if (ort.location !== "cpu") ort.dispose();
  }
}

function num(v: unknown, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) ? v : fallback;
}

function usesByteLevel(decoder: unknown): boolean {
  if (!decoder || typeof decoder !== "object") return false;
  const d = decoder as { type?: string; decoders?: unknown[] };
  return d.type === "ByteLevel" || (Array.isArray(d.decoders) && d.decoders.some(usesByteLevel));
}

/** The context window: the manifest's `options.context_length`, else what config and tokenizer allow. */
function contextLengthOf(entry: ModelEntry, config: Record<string, unknown>, tokenizerMax: number): number {
  const candidates = [
    Number(entry.options.context_length),
    Number(config.max_position_embeddings),
    Number(tokenizerMax),
  ].filter((n) => Number.isInteger(n) && n > 0 && n < 1e8);
  return candidates.length ? Math.min(...candidates) : 2048;
}

/** A message as chat templates expect it (Hugging Face's conventions: tool-call arguments as objects). */
function templateMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: m.content ?? "" };
  if (m.name !== undefined) out.name = m.name;
  if (m.toolCalls?.length) {
    out.tool_calls = m.toolCalls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: parseArguments(c.arguments) },
    }));
  }
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  return out;
}

function parseArguments(text: string): unknown {
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === "object" ? v : text;
  } catch {
    return text;
  }
}

function templateTool(t: ChatTool): Record<string, unknown> {
  return {
    type: "function",
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.parameters ?? { type: "object", properties: {} },
    },
  };
}

/**
 * Session options and device for a manifest entry on the bound runtime. The manifest's `options.ort_spinning:
 * true` turns onnxruntime's busy-waiting worker threads back on (for a machine dedicated to one model).
 */
function modelDevice(rt: TransformersRuntime, entry: ModelEntry, threads: number) {
  const spin = entry.options.ort_spinning === true;
  return { device: rt.device, session_options: rt.sessionOptions(entry.device, threads, true, spin) };
}

/** The loader registered for the "chat" task. */
export async function loadChat(entry: ModelEntry, ctx: LoadContext): Promise<TransformersChat> {
  const dtype = entry.dtype ?? "fp32";
  if (!knownDtype(dtype)) throw new Error(`unknown dtype "${dtype}" in the manifest`);
  const modelFileName = typeof entry.options.model_file_name === "string"
    ? entry.options.model_file_name
    : "model";
  const files = requiredChatFiles(dtype, modelFileName);
  const source = resolveChatSource(entry, ctx, files);
  const rt = await transformersRuntime(entry.device, ctx.log);
  const { tf } = rt;
  const progress = source.cacheDir !== undefined ? downloadProgress(entry.id, ctx.log) : undefined;
  const opts = {
    local_files_only: source.cacheDir === undefined,
    ...(source.cacheDir !== undefined ? { cache_dir: source.cacheDir } : {}),
    ...(progress ? { progress_callback: progress.callback as never } : {}),
  };
  ctx.log.info("loading chat model", {
    model: entry.id,
    from: source.cacheDir !== undefined ? `https://huggingface.co/${source.id}` : source.dir,
    dtype,
    device: entry.device,
    adapter: rt.adapter,
  });
  let tokenizer: Tokenizer;
  let model: Model;
  try {
    tokenizer = await tf.AutoTokenizer.from_pretrained(source.id, opts);
    model = await tf.AutoModelForCausalLM.from_pretrained(source.id, {
      ...opts,
      dtype: dtype as never,
      ...(modelFileName !== "model" ? { model_file_name: modelFileName } : {}),
      ...modelDevice(rt, entry, ctx.threads),
    } as never);
  } catch (e) {
    if ((e as Error).name === "ModelFileNotFoundError" || e instanceof Deno.errors.NotFound) {
      throw new ModelFilesMissing(
        `${missingMessage(entry, files, ctx.allowRemote)} (${(e as Error).message})`,
      );
    }
    throw e;
  } finally {
    progress?.stop();
  }
  const engine = new TransformersChat(entry, { tf, rt, tokenizer, model, dtype });
  try {
    await engine.warmUp();
  } catch (e) {
    await engine.dispose().catch(() => {});
    throw e;
  }
  ctx.log.info("chat model ready", {
    model: entry.id,
    backend: engine.backend,
    adapter: rt.adapter,
    dtype,
    contextLength: engine.contextLength,
    vocab: engine.vocabSize,
  });
  return engine;
}
