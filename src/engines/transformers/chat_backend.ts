// Owns the chat backend on transformers.js: loading a causal LM (AutoTokenizer + AutoModelForCausalLM) on the
// runtime of this thread, rendering conversations through the model's own chat template, and sequences over
// the ONNX graph's KV cache: prefill, one step per token, forks that share the prefilled cache. The decode
// loop itself (sampling, constraints, text) is the chat pipeline's (src/chat/pipeline.ts).
import { ChatPromptError, ModelFilesMissing } from "../../errors.ts";
import type { ChatBackend, ChatMessage, ChatTool, LoadContext, ModelEntry, SequenceId } from "../types.ts";
import { ensureChatFiles, knownDtype, missingMessage, requiredChatFiles } from "./chat_files.ts";
import { TokenTexts } from "./token_texts.ts";
import { templateMessage, templateTool } from "../template_view.ts";
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

/** A KV cache shared by forked sequences; its GPU tensors are freed when the last one lets go. */
interface CacheRef {
  tensors: Cache;
  refs: number;
}

interface Sequence {
  cache: CacheRef | null;
  /** Tokens the cache holds. */
  length: number;
}

interface Parts {
  tf: TransformersModule;
  rt: TransformersRuntime;
  tokenizer: Tokenizer;
  model: Model;
  dtype: string;
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

  render(messages: ChatMessage[], tools?: ChatTool[]): number[] {
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
    return Array.from(ids as ArrayLike<number>, Number);
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

  open(): SequenceId {
    const id = this.#nextSeq++;
    this.#seqs.set(id, { cache: null, length: 0 });
    return id;
  }

  fork(seq: SequenceId): SequenceId {
    const s = this.#seq(seq);
    const id = this.#nextSeq++;
    if (s.cache) s.cache.refs++;
    this.#seqs.set(id, { cache: s.cache, length: s.length });
    return id;
  }

  close(seq: SequenceId): void {
    const s = this.#seqs.get(seq);
    if (!s) return;
    this.#seqs.delete(seq);
    release(s.cache);
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
    const n = ids.length;
    if (n === 0) throw new Error("nothing to prefill");
    if (s.length + n > this.contextLength) {
      throw new Error(`${s.length + n} tokens exceed the context window (${this.contextLength})`);
    }
    const positions = new BigInt64Array(n);
    for (let i = 0; i < n; i++) positions[i] = BigInt(s.length + i + this.#positionBase);
    const logits = await this.#advance(s, {
      input_ids: new tf.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, n]),
      attention_mask: this.#mask(s.length + n),
      position_ids: new tf.Tensor("int64", positions, [1, n]),
    }, n);
    return { logits, cachedTokens: 0 };
  }

  // Reused for every decode step: one token id and its position.
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
    this.#stepId[0] = BigInt(token);
    this.#stepPos[0] = BigInt(s.length + this.#positionBase);
    return this.#advance(s, {
      input_ids: this.#stepTensors.id,
      attention_mask: this.#mask(s.length + 1),
      position_ids: this.#stepTensors.pos,
    }, 1);
  }

  /** One model run on a sequence: its cache moves on by `added` tokens; returns the last logits. */
  async #advance(s: Sequence, feeds: Record<string, Tensor>, added: number): Promise<Float32Array> {
    const { row, cache } = await this.#forward(feeds, s.cache?.tensors ?? null);
    release(s.cache);
    s.cache = { tensors: cache, refs: 1 };
    s.length += added;
    return row;
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
    for (const seq of [...this.#seqs.keys()]) this.close(seq);
    await this.#p.model.dispose();
  }
}

/** Lets go of a shared cache; the last holder frees its GPU tensors. */
function release(ref: CacheRef | null): void {
  if (ref && --ref.refs === 0) disposeCache(ref.tensors);
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
/**
 * Session options and device for a manifest entry on the bound runtime. The manifest's `options.ort_spinning:
 * true` turns onnxruntime's busy-waiting worker threads back on (for a machine dedicated to one model).
 */
function modelDevice(rt: TransformersRuntime, entry: ModelEntry, threads: number) {
  const spin = entry.options.ort_spinning === true;
  return { device: rt.device, session_options: rt.sessionOptions(entry.device, threads, true, spin) };
}

/** Loads the transformers.js chat backend of an entry on this thread. */
export async function loadChatBackend(entry: ModelEntry, ctx: LoadContext): Promise<TransformersChat> {
  const dtype = entry.dtype ?? "fp32";
  if (!knownDtype(dtype)) throw new Error(`unknown dtype "${dtype}" in the manifest`);
  const modelFileName = typeof entry.options.model_file_name === "string"
    ? entry.options.model_file_name
    : "model";
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
  let model: Model;
  try {
    tokenizer = await tf.AutoTokenizer.from_pretrained(entry.path, opts);
    model = await tf.AutoModelForCausalLM.from_pretrained(entry.path, {
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
