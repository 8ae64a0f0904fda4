// Owns the chat backend on transformers.js: loading a causal LM (AutoTokenizer + AutoModelForCausalLM) on the
// runtime of this thread, rendering conversations through the model's own chat template, and sequences over
// the ONNX graph's KV cache: prefill, one step per token, forks that share the prefilled cache. Several
// sequences generate at once interleaved token by token (one model run at a time, in arrival order), and
// closed sequences stay as a prompt cache: a prefill starts from the longest prefix one of them holds. The
// decode loop itself (sampling, constraints, text) is the chat pipeline's (src/chat/pipeline.ts).
import { ChatPromptError, ModelFilesMissing } from "../../errors.ts";
import type {
  ChatBackend,
  ChatMessage,
  ChatTool,
  LoadContext,
  ModelEntry,
  RenderOptions,
  SequenceId,
} from "../types.ts";
import {
  chatModelFileName,
  ensureChatFiles,
  knownDtype,
  missingMessage,
  requiredChatFiles,
} from "./chat_files.ts";
import { TokenTexts } from "./token_texts.ts";
import { filesBytes, onnxWeightFiles, tensorBytes } from "./weights.ts";
import {
  type TemplateConventions,
  templateConventions,
  templateMessage,
  templateTool,
  toolsOnSystemMessage,
} from "../template_view.ts";
import {
  spinEntries,
  spinOf,
  type TransformersModule,
  type TransformersRuntime,
  transformersRuntime,
} from "./runtime.ts";
import { graphHasOp, halfToFloat, NativeDecoder, type NativeKv } from "./native_decoder.ts";
import { DTYPE_SUFFIX } from "../../hub/dtypes.ts";
import { join } from "node:path";

type Tokenizer = Awaited<ReturnType<TransformersModule["AutoTokenizer"]["from_pretrained"]>>;
type Model = Awaited<ReturnType<TransformersModule["AutoModelForCausalLM"]["from_pretrained"]>>;
type Tensor = InstanceType<TransformersModule["Tensor"]>;

interface OrtSession {
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata?: readonly { name: string; type?: string; shape?: readonly (number | string)[] }[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
}

interface OrtTensor {
  location: string;
  type: string;
  dims: readonly number[];
  data: ArrayLike<number>;
  getData(release?: boolean): Promise<ArrayLike<number>>;
  dispose(): void;
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

/**
 * A KV cache shared by forked sequences; its GPU tensors (or native tensors) are freed when the last one lets
 * go. Native decoders hold a NativeKv, every other model a record of transformers.js tensors.
 */
interface CacheRef {
  tensors: Cache | NativeKv;
  refs: number;
}

interface Sequence {
  cache: CacheRef | null;
  /** The tokens the cache holds (the prompt cache matches prefixes against them). */
  tokens: number[];
  /** The native decoder's logits for this sequence, reused run after run (see ChatBackend.prefill). */
  logits?: Float32Array;
}

/** A closed sequence kept for its cache. */
interface Cached {
  cache: CacheRef;
  tokens: number[];
}

interface Parts {
  tf: TransformersModule;
  rt: TransformersRuntime;
  tokenizer: Tokenizer;
  /** transformers.js's model, or (a decoder run natively) null. */
  model: Model | null;
  /** The decoder on onnxruntime's C API with its cache in place (native_decoder.ts), when it takes one. */
  native: NativeDecoder | null;
  config: Record<string, unknown>;
  generationConfig: Record<string, unknown>;
  dtype: string;
  /** Bytes of the ONNX files loaded (the dtype's graph and external data). */
  weightsBytes?: number;
}

export class TransformersChat implements ChatBackend {
  readonly backend: string;
  readonly contextLength: number;
  readonly defaults: { temperature: number; topP: number; topK: number };
  /** Logits width, learned from the warm-up run. */
  vocabSize = 0;
  readonly eosIds: ReadonlySet<number>;
  readonly tokenTexts: TokenTexts;
  readonly tokenizerJson: unknown;
  readonly chatTemplate: string | null;
  /** Sequences generating at once (interleaved token by token); also how many closed ones the cache keeps. */
  readonly parallel: number;

  readonly #p: Parts;
  /** The template splices tool-call arguments into text (template_view.ts). */
  #conv: TemplateConventions | undefined;
  readonly #cacheNames: [string, string][];
  readonly #inputs: ReadonlySet<string>;
  readonly #positionBase: number;
  /**
   * All-ones attention mask for any length up to the context; views of it are fed, never copies. Empty with a
   * native decoder, which feeds its own.
   */
  readonly #ones: BigInt64Array;
  readonly #keepOne: Tensor | null;
  readonly #decode: (ids: number[]) => string;
  /**
   * The decoder session, run directly when every input it takes is one this class feeds (ids, mask,
   * positions, the KV cache, num_logits_to_keep, use_cache_branch): no per-run input validation and wrapping
   * by transformers.js. Anything else (hybrid caches, extra inputs) runs through transformers.js's forward, as
   * does every model without the manifest's `options.onnx_direct_run: true`.
   */
  readonly #direct: { session: OrtSession; empty: Record<string, OrtTensor>; flags: OrtTensor[] } | null;
  readonly #native: NativeDecoder | null;

  constructor(readonly entry: ModelEntry, parts: Parts, parallel = 1) {
    this.#p = parts;
    this.parallel = Math.max(1, parallel);
    const { tokenizer, model, rt, dtype, config, generationConfig: gen, native } = parts;
    const session = model ? sessionOf(model) : null;
    this.#native = native;
    this.#inputs = new Set(session?.inputNames ?? []);
    this.#cacheNames = [];
    for (const name of session?.outputNames ?? []) {
      const rename = CACHE_RENAMES.find(([from]) => name.startsWith(from));
      if (rename) this.#cacheNames.push([name, rename[1] + name.slice(rename[0].length)]);
    }
    this.contextLength = contextLengthOf(entry, config, tokenizer.model_max_length);
    this.#ones = native ? new BigInt64Array(0) : new BigInt64Array(this.contextLength).fill(1n);
    this.#positionBase = ONE_BASED_POSITIONS.has(String(config.model_type)) ? 1 : 0;
    this.#keepOne = this.#inputs.has("num_logits_to_keep")
      ? new parts.tf.Tensor("int64", BigInt64Array.of(1n), [])
      : null;
    // Opt-in for now: the load test's resident set grew ~2-3 KB more per request with it (not yet explained).
    this.#direct = session && entry.options.onnx_direct_run === true ? directRun(parts.tf, session) : null;
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
    this.backend = native
      ? `cpu via onnxruntime's C API (cache in place) ${dtype}`
      : `${rt.backend} ${dtype}`;
  }

  render(messages: ChatMessage[], tools?: ChatTool[], opts: RenderOptions = {}): number[] {
    const tok = this.#p.tokenizer;
    this.#conv ??= templateConventions((v) =>
      String(tok.apply_chat_template(v.messages as never, { ...v, tokenize: false } as never))
    );
    const conversation = toolsOnSystemMessage(
      String((tok as unknown as { chat_template?: unknown }).chat_template ?? ""),
      messages.map((m) => templateMessage(m, this.#conv)),
      tools?.length ? tools.map(templateTool) : null,
    );
    let ids: unknown;
    try {
      ids = this.#p.tokenizer.apply_chat_template(conversation as never, {
        tools: tools?.length ? tools.map(templateTool) : null,
        add_generation_prompt: true,
        tokenize: true,
        return_tensor: false,
        return_dict: false,
        ...(opts.thinking === undefined ? {} : { enable_thinking: opts.thinking }),
        ...(opts.reasoningEffort === undefined ? {} : { reasoning_effort: opts.reasoningEffort }),
      } as never);
    } catch (e) {
      throw new ChatPromptError(
        `The model's chat template cannot render these messages: ${(e as Error).message}`,
      );
    }
    return Array.from(ids as ArrayLike<number>, Number);
  }

  encode(text: string, addSpecial: boolean): number[] {
    return this.#p.tokenizer.encode(text, { add_special_tokens: addSpecial });
  }

  tokenId(piece: string): number | undefined {
    const id = this.#p.tokenizer.convert_tokens_to_ids(piece) as number | null | undefined;
    return typeof id === "number" ? id : undefined;
  }

  /** Text of ids as the model's tokenizer decodes them (special tokens skipped). */
  decode(ids: number[]): string {
    return this.#decode(ids);
  }

  tokenText(id: number): { text: string; bytes: number[] } {
    return this.tokenTexts.get(id);
  }

  readonly #seqs = new Map<SequenceId, Sequence>();
  #nextSeq = 1;
  /** Closed sequences kept for their caches, most recently closed last. */
  readonly #cached: Cached[] = [];

  open(): SequenceId {
    const id = this.#nextSeq++;
    this.#seqs.set(id, { cache: null, tokens: [] });
    return id;
  }

  fork(seq: SequenceId): SequenceId {
    const s = this.#seq(seq);
    const id = this.#nextSeq++;
    if (s.cache) s.cache.refs++;
    this.#seqs.set(id, { cache: s.cache, tokens: s.tokens.slice() });
    return id;
  }

  close(seq: SequenceId): void {
    const s = this.#seqs.get(seq);
    if (!s) return;
    this.#seqs.delete(seq);
    if (!s.cache || !s.tokens.length) return this.#release(s.cache);
    // Kept as the prompt cache: the `parallel` latest, so memory stays bounded by what running ones use.
    this.#cached.push({ cache: s.cache, tokens: s.tokens });
    for (const old of this.#cached.splice(0, Math.max(0, this.#cached.length - this.parallel))) {
      this.#release(old.cache);
    }
  }

  /**
   * The loaded weights plus the KV cache every sequence holds now, open ones and the prompt cache (forks share
   * one cache, counted once).
   */
  memoryBytes(): number {
    const caches = new Set<CacheRef>();
    for (const s of this.#seqs.values()) if (s.cache) caches.add(s.cache);
    for (const c of this.#cached) caches.add(c.cache);
    let kv = 0;
    for (const c of caches) {
      if (isNative(c.tensors)) kv += this.#native!.bytes(c.tensors);
      else for (const t of Object.values(c.tensors)) kv += tensorBytes(t);
    }
    return (this.#p.weightsBytes ?? 0) + kv;
  }

  /** Forgets every closed sequence kept as the prompt cache. */
  clearCache(): void {
    for (const c of this.#cached.splice(0)) this.#release(c.cache);
  }

  /** Sequences open (the registry never unloads a busy engine). */
  busy(): boolean {
    return this.#seqs.size > 0;
  }

  #seq(seq: SequenceId): Sequence {
    const s = this.#seqs.get(seq);
    if (!s) throw new Error(`no sequence ${seq}`);
    return s;
  }

  async prefill(seq: SequenceId, ids: number[]): Promise<{ logits: Float32Array; cachedTokens: number }> {
    const { tf } = this.#p;
    const s = this.#seq(seq);
    if (ids.length === 0) throw new Error("nothing to prefill");
    if (s.tokens.length + ids.length > this.contextLength) {
      throw new Error(
        `${s.tokens.length + ids.length} tokens exceed the context window (${this.contextLength})`,
      );
    }
    const cachedTokens = s.tokens.length === 0 ? await this.#reuse(s, ids) : 0;
    const rest = ids.slice(cachedTokens);
    const n = rest.length;
    const logits = await this.#advance(s, () => {
      const positions = new BigInt64Array(n);
      for (let i = 0; i < n; i++) positions[i] = BigInt(s.tokens.length + i + this.#positionBase);
      return {
        input_ids: new tf.Tensor("int64", BigInt64Array.from(rest, BigInt), [1, n]),
        attention_mask: this.#mask(s.tokens.length + n),
        position_ids: new tf.Tensor("int64", positions, [1, n]),
      };
    }, rest);
    return { logits, cachedTokens };
  }

  /**
   * Starts an empty sequence from the longest prefix of `ids` a closed sequence holds (at least one id is left
   * to run: its logits are the answer). Returns how many ids it reused.
   */
  async #reuse(s: Sequence, ids: number[]): Promise<number> {
    let best: Cached | null = null;
    let bestLen = 0;
    for (const c of this.#cached) {
      const len = commonPrefix(c.tokens, ids);
      if (len > bestLen) best = c, bestLen = len;
    }
    const reuse = Math.min(bestLen, ids.length - 1);
    if (!best || reuse === 0) return 0;
    // A native cache is shared whole: its valid length is the sequence's, and a write copies it first.
    if (reuse === best.tokens.length || isNative(best.cache.tensors)) {
      best.cache.refs++;
      s.cache = best.cache;
    } else {
      // Recurrent states (hybrid models) hold the whole history and can't be cut back to a prefix.
      if (this.#cacheNames.some(([, input]) => !input.startsWith("past_key_values."))) return 0;
      s.cache = { tensors: await this.#truncate(best.cache.tensors as Cache, reuse), refs: 1 };
    }
    s.tokens = ids.slice(0, reuse);
    return reuse;
  }

  /** The first `length` positions of a KV cache ([batch, heads, positions, head size] tensors), copied. */
  async #truncate(cache: Cache, length: number): Promise<Cache> {
    const out: Cache = {};
    for (const [name, t] of Object.entries(cache)) {
      const ort = ortOf(t);
      const [b, h, len, d] = ort.dims;
      const data = (ort.location === "cpu" ? ort.data : await ort.getData()) as Float32Array;
      const Ctor = data.constructor as new (n: number) => Float32Array;
      const cut = new Ctor(b * h * length * d);
      for (let r = 0; r < b * h; r++) {
        cut.set(data.subarray(r * len * d, r * len * d + length * d), r * length * d);
      }
      out[name] = new this.#p.tf.Tensor(ort.type as "float32", cut, [b, h, length, d]);
      halfAsUint16(ortOf(out[name]));
    }
    return out;
  }

  // Reused for every decode step: one token id and its position (filled inside the model lock).
  readonly #stepId = new BigInt64Array(1);
  readonly #stepPos = new BigInt64Array(1);
  #stepTensors?: { id: Tensor; pos: Tensor };

  step(seq: SequenceId, token: number): Promise<Float32Array> {
    const { tf } = this.#p;
    const s = this.#seq(seq);
    this.#stepTensors ??= {
      id: new tf.Tensor("int64", this.#stepId, [1, 1]),
      pos: new tf.Tensor("int64", this.#stepPos, [1, 1]),
    };
    const step = this.#stepTensors;
    return this.#advance(s, () => {
      this.#stepId[0] = BigInt(token);
      this.#stepPos[0] = BigInt(s.tokens.length + this.#positionBase);
      return { input_ids: step.id, attention_mask: this.#mask(s.tokens.length + 1), position_ids: step.pos };
    }, [token]);
  }

  /** The end of the model-run queue: one run at a time, in the order they were asked for. */
  #turn: Promise<unknown> = Promise.resolve();

  /**
   * One model run on a sequence, after the runs queued before it (so interleaved sequences never run two at a
   * time: onnxruntime-web refuses that, and on the CPU they would only fight over the same threads). Its cache
   * moves on by `added`; returns the last logits.
   */
  #advance(s: Sequence, feeds: () => Record<string, Tensor>, added: number[]): Promise<Float32Array> {
    const run = this.#turn.then(async () => {
      if (this.#native) return await this.#advanceNative(this.#native, s, added);
      const { row, cache } = await this.#forward(feeds(), (s.cache?.tensors as Cache | undefined) ?? null);
      this.#release(s.cache);
      s.cache = { tensors: cache, refs: 1 };
      s.tokens.push(...added);
      return row;
    });
    this.#turn = run.catch(() => {});
    return run;
  }

  /** One native run: appends to the sequence's cache in place when it holds it alone, else to a copy. */
  async #advanceNative(native: NativeDecoder, s: Sequence, added: number[]): Promise<Float32Array> {
    const old = s.cache;
    const kv = (old?.tensors as NativeKv | undefined) ?? null;
    s.logits ??= new Float32Array(native.vocabSize);
    const out = await native.run(
      kv,
      s.tokens.length,
      added,
      this.#positionBase,
      !old || old.refs === 1,
      s.logits,
    );
    if (out.kv !== kv) {
      this.#release(old);
      s.cache = { tensors: out.kv, refs: 1 };
    }
    s.tokens.push(...added);
    return out.row;
  }

  #mask(length: number): Tensor {
    return new this.#p.tf.Tensor("int64", this.#ones.subarray(0, length), [1, length]);
  }

  /** One model run; returns the last position's logits (float32) and the cache for the next run. */
  async #forward(
    feeds: Record<string, Tensor>,
    cache: Cache | null,
  ): Promise<{ row: Float32Array; cache: Cache }> {
    const direct = this.#direct;
    if (direct) {
      const ortFeeds: Record<string, OrtTensor> = cache ? {} : { ...direct.empty };
      for (const [name, t] of Object.entries(feeds)) if (this.#inputs.has(name)) ortFeeds[name] = ortOf(t);
      if (cache) { for (const [name, t] of Object.entries(cache)) ortFeeds[name] = ortOf(t); }
      if (this.#keepOne) ortFeeds.num_logits_to_keep = ortOf(this.#keepOne);
      if (this.#inputs.has("use_cache_branch")) ortFeeds.use_cache_branch = direct.flags[cache ? 1 : 0];
      const out = await direct.session.run(ortFeeds);
      const next: Cache = {};
      for (const [output, input] of this.#cacheNames) {
        next[input] = new this.#p.tf.Tensor(halfAsUint16(out[output]) as never);
      }
      return { row: await lastRow(out.logits), cache: next };
    }
    const inputs: Record<string, unknown> = feeds;
    if (cache) inputs.past_key_values = cache;
    if (this.#keepOne) inputs.num_logits_to_keep = this.#keepOne;
    const out = (await this.#p.model!.forward(inputs)) as Record<string, Tensor>;
    const next: Cache = {};
    for (const [output, input] of this.#cacheNames) next[input] = out[output];
    const row = await lastRow(ortOf(out.logits));
    return { row, cache: next };
  }

  /** A short run so the first request doesn't pay for graph initialisation. */
  async warmUp(): Promise<void> {
    // A native decoder ran its check at open.
    if (this.#native) return void (this.vocabSize = this.#native.vocabSize);
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
    for (const seq of [...this.#seqs.keys()]) this.close(seq);
    this.clearCache();
    await this.#turn; // a run still in flight finishes on a live session
    await this.#p.model?.dispose();
    await this.#native?.dispose();
  }

  /** Lets go of a shared cache; the last holder frees its GPU (or native) tensors. */
  #release(ref: CacheRef | null): void {
    if (!ref || --ref.refs > 0) return;
    if (isNative(ref.tensors)) this.#native?.release(ref.tensors);
    else disposeCache(ref.tensors);
  }
}

function isNative(c: Cache | NativeKv): c is NativeKv {
  return Array.isArray((c as NativeKv).tensors);
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

function sessionOf(model: Model): OrtSession {
  const sessions = (model as unknown as { sessions: Record<string, OrtSession> }).sessions;
  const s = sessions.model ?? sessions.decoder_model_merged;
  if (!s) throw new Error("the model has no decoder session");
  return s;
}

/**
 * onnxruntime-common hands float16 data out as Float16Array where the JS engine has one, but the native binding
 * only takes Uint16Array back as an input (transformers.js's own forward patches its feeds the same way).
 */
function halfAsUint16(t: OrtTensor): OrtTensor {
  const cpu = t as OrtTensor & { cpuData?: unknown };
  if (t.location === "cpu" && typeof Float16Array !== "undefined" && cpu.cpuData instanceof Float16Array) {
    const d = cpu.cpuData;
    cpu.cpuData = new Uint16Array(d.buffer, d.byteOffset, d.length);
  }
  return t;
}

/** Inputs the direct run feeds itself; a session with any other input runs through transformers.js. */
const DIRECT_INPUTS = new Set([
  "input_ids",
  "attention_mask",
  "position_ids",
  "num_logits_to_keep",
  "use_cache_branch",
]);

/**
 * What a direct run needs beyond the per-run feeds: the empty KV cache of a first run (zero positions, each
 * input's own element type, so float16 caches stay float16) and use_cache_branch's two values; null when the
 * session takes inputs it doesn't know or has caches other than past_key_values.
 */
function directRun(
  tf: TransformersModule,
  session: OrtSession,
): { session: OrtSession; empty: Record<string, OrtTensor>; flags: OrtTensor[] } | null {
  const past = session.inputNames.filter((n) => n.startsWith("past_key_values."));
  if (session.inputNames.some((n) => !DIRECT_INPUTS.has(n) && !past.includes(n))) return null;
  if (!session.inputMetadata) return null;
  const empty: Record<string, OrtTensor> = {};
  for (const name of past) {
    const meta = session.inputMetadata.find((m) => m.name === name);
    const shape = meta?.shape?.map((d, i) => typeof d === "number" && d >= 0 ? d : i === 0 ? 1 : 0);
    const type = meta?.type === "float16" ? "float16" : "float32";
    if (!shape || shape.length !== 4) return null;
    const data = type === "float16" ? new Uint16Array(0) : new Float32Array(0);
    empty[name] = halfAsUint16(ortOf(new tf.Tensor(type, data as never, shape)));
  }
  const flag = (v: boolean) => ortOf(new tf.Tensor("bool", [v] as never, [1]));
  return { session, empty, flags: [flag(false), flag(true)] };
}

function ortOf(t: Tensor): OrtTensor {
  return (t as unknown as { ort_tensor: OrtTensor }).ort_tensor;
}

/** The last position's logits as float32 (a view when they already are; fp16 is widened; GPU is read back). */
async function lastRow(ort: OrtTensor): Promise<Float32Array> {
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

/**
 * Session options and device for a manifest entry on the bound runtime. The manifest's `options.ort_spinning`
 * picks when onnxruntime's worker threads busy-wait (runtime.ts, Spin).
 */
function modelDevice(rt: TransformersRuntime, entry: ModelEntry, threads: number) {
  const spin = spinOf(entry.options.ort_spinning);
  return { device: rt.device, session_options: rt.sessionOptions(entry.device, threads, true, spin) };
}

/**
 * The decoder on onnxruntime's C API with its cache in place, for a CPU model whose graph uses
 * GroupQueryAttention (the only operator that appends in place), unless the manifest says
 * `options.onnx_native: false`. Null (logged, with why) when it can't be one: transformers.js runs it then.
 */
async function openNative(
  entry: ModelEntry,
  rt: TransformersRuntime,
  ctx: LoadContext,
  file: string,
  opts: { maxLength: number },
): Promise<NativeDecoder | null> {
  if (rt.kind !== "cpu" || entry.device === "webgpu" || entry.options.onnx_native === false) return null;
  if (!(await graphHasOp(file, "GroupQueryAttention").catch(() => false))) return null;
  try {
    return await NativeDecoder.open(file, {
      threads: ctx.threads,
      config: spinEntries(spinOf(entry.options.ort_spinning)),
      maxLength: opts.maxLength,
    });
  } catch (e) {
    ctx.log.warn("chat model runs through transformers.js, not natively", {
      model: entry.id,
      reason: (e as Error).message,
    });
    return null;
  }
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  try {
    return JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return {};
    throw e;
  }
}

/** Loads the transformers.js chat backend of an entry on this thread. */
export async function loadChatBackend(entry: ModelEntry, ctx: LoadContext): Promise<TransformersChat> {
  const dtype = entry.dtype ?? "fp32";
  if (!knownDtype(dtype)) throw new Error(`unknown dtype "${dtype}" in the manifest`);
  const modelFileName = chatModelFileName(entry);
  const files = requiredChatFiles(dtype, modelFileName);
  await ensureChatFiles(entry, ctx, files);
  const rt = await transformersRuntime(entry.device, ctx.log);
  const { tf } = rt;
  const opts = { local_files_only: true };
  ctx.log.info("loading chat model", {
    model: entry.id,
    from: entry.path,
    dtype,
    device: entry.device,
    adapter: rt.adapter,
  });
  let tokenizer: Tokenizer;
  let model: Model | null = null;
  let native: NativeDecoder | null = null;
  let config: Record<string, unknown>;
  let generationConfig: Record<string, unknown>;
  try {
    tokenizer = await tf.AutoTokenizer.from_pretrained(entry.path, opts);
    config = (await tf.AutoConfig.from_pretrained(entry.path, opts)) as unknown as Record<string, unknown>;
    native = await openNative(
      entry,
      rt,
      ctx,
      join(entry.path, "onnx", `${modelFileName}${DTYPE_SUFFIX[dtype]}.onnx`),
      {
        maxLength: contextLengthOf(entry, config, tokenizer.model_max_length),
      },
    );
    if (native) {
      generationConfig = await readJson(join(entry.path, "generation_config.json"));
    } else {
      model = await tf.AutoModelForCausalLM.from_pretrained(entry.path, {
        ...opts,
        dtype: dtype as never,
        ...(modelFileName !== "model" ? { model_file_name: modelFileName } : {}),
        ...modelDevice(rt, entry, ctx.threads),
      } as never);
      config = model.config as unknown as Record<string, unknown>;
      generationConfig =
        ((model as unknown as { generation_config?: Record<string, unknown> }).generation_config ??
          {}) as Record<
            string,
            unknown
          >;
    }
  } catch (e) {
    if ((e as Error).name === "ModelFileNotFoundError" || e instanceof Deno.errors.NotFound) {
      throw new ModelFilesMissing(
        `${missingMessage(entry, files, ctx.allowRemote)} (${(e as Error).message})`,
      );
    }
    throw e;
  }
  const weightsBytes = filesBytes(onnxWeightFiles(entry.path, dtype, modelFileName));
  const engine = new TransformersChat(
    entry,
    { tf, rt, tokenizer, model, native, config, generationConfig, dtype, weightsBytes },
    ctx.parallel,
  );
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
