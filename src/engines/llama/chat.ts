// Owns the chat backend on llama.cpp: a GGUF model and one context whose unified KV cache holds every
// sequence. Conversations render through the model's own chat template (GGUF metadata) with the same Jinja
// engine and message shapes as the transformers.js backend, and tokenize with libllama. Sequences map to
// llama.cpp sequence ids; a closed sequence keeps its tokens and cache cells so a later prompt that starts
// the same way (system prompt, tools, the conversation so far) reuses the longest cached prefix. Decoding
// goes through one DecodeBatcher, so concurrent sequences share each llama_decode.
import { Template } from "@huggingface/jinja";
import { ChatPromptError } from "../../errors.ts";
import { tokenDisplayText } from "../byte_level.ts";
import { templateMessage, templateTool } from "../template_view.ts";
import type { ChatBackend, ChatMessage, ChatTool, ModelEntry, SequenceId } from "../types.ts";
import { DecodeBatcher } from "./batch.ts";
import type { LlamaContext, LlamaModel } from "./ffi.ts";

const ATTR_CONTROL = 1 << 3;

interface Slot {
  /** llama.cpp sequence id. */
  id: number;
  /** The tokens whose cells the KV cache holds for this sequence, in order from position 0. */
  tokens: number[];
  state: "free" | "active" | "cached";
  /** When it was last closed (LRU for reuse). */
  closedAt: number;
}

const utf8 = new TextDecoder();

export class LlamaChat implements ChatBackend {
  readonly backend: string;
  readonly contextLength: number;
  readonly vocabSize: number;
  readonly eosIds: ReadonlySet<number>;
  readonly tokenizerJson = null;
  readonly chatTemplate: string | null;
  #pieceIds: Map<string, number> | null = null;
  readonly defaults: { temperature: number; topP: number; topK: number };
  readonly batcher: DecodeBatcher;
  /** Sequences meant to generate together (the model's queue admits this many jobs). */
  readonly parallel: number;

  readonly #slots: Slot[];
  readonly #handles = new Map<SequenceId, Slot>();
  #nextHandle = 1;
  #clock = 0;
  readonly #template: Template | null;
  readonly #special: Record<string, string>;
  /** Bytes of each token as text (control tokens: none). */
  readonly #text: Uint8Array[];
  /** Bytes of each token with control tokens spelled out (logprobs show them). */
  readonly #spelled: Uint8Array[];
  readonly #flags: Int32Array;

  constructor(
    readonly entry: ModelEntry,
    readonly model: LlamaModel,
    readonly ctx: LlamaContext,
    opts: { contextLength: number; nBatch: number; parallel: number; description: string },
  ) {
    this.parallel = opts.parallel;
    const info = model.info;
    this.vocabSize = info.nVocab;
    this.contextLength = opts.contextLength;
    this.#flags = model.tokenFlags();
    const eos = new Set<number>();
    this.#flags.forEach((f, t) => f & 1 && eos.add(t));
    if (info.eos >= 0) eos.add(info.eos);
    this.eosIds = eos;
    this.#text = model.tokenPieces(false);
    this.#spelled = model.tokenPieces(true);
    this.chatTemplate = model.chatTemplate();
    this.#template = this.chatTemplate ? new Template(this.chatTemplate) : null;
    const piece = (id: number) => id >= 0 && id < info.nVocab ? utf8.decode(this.#spelled[id]) : undefined;
    this.#special = {};
    const bos = piece(info.bos);
    const eosText = piece(info.eos);
    if (bos) this.#special.bos_token = bos;
    if (eosText) this.#special.eos_token = eosText;
    const num = (key: string, fallback: number) => {
      const v = Number(model.meta(key));
      return Number.isFinite(v) && model.meta(key) !== undefined ? v : fallback;
    };
    // GGUF's optional sampling defaults (general.sampling.*); OpenAI's defaults otherwise.
    this.defaults = {
      temperature: num("general.sampling.temp", 1),
      topP: num("general.sampling.top_p", 1),
      topK: num("general.sampling.top_k", 0),
    };
    this.#slots = Array.from({ length: ctx.opts.nSeqMax }, (_, id) => ({
      id,
      tokens: [],
      state: "free" as const,
      closedAt: 0,
    }));
    this.batcher = new DecodeBatcher(
      ctx,
      opts.nBatch,
      info.nVocab,
      () => this.#evictCached(),
      () => this.#handles.size,
    );
    this.backend = opts.description;
  }

  /** Each token's bytes (null for control tokens, which are never text): the constraint vocabulary. */
  tokenBytes(): readonly (Uint8Array | null)[] {
    return this.#text.map((b, t) => (this.#flags[t] >> 8) & ATTR_CONTROL ? null : b);
  }

  render(messages: ChatMessage[], tools?: ChatTool[], opts: { thinking?: boolean } = {}): number[] {
    if (!this.#template) {
      throw new ChatPromptError("The model has no chat template (tokenizer.chat_template).");
    }
    let text: string;
    try {
      text = this.#template.render({
        messages: messages.map(templateMessage),
        add_generation_prompt: true,
        tools: tools?.length ? tools.map(templateTool) : null,
        documents: null,
        ...this.#special,
        ...(opts.thinking === undefined ? {} : { enable_thinking: opts.thinking }),
      });
    } catch (e) {
      throw new ChatPromptError(
        `The model's chat template cannot render these messages: ${(e as Error).message}`,
      );
    }
    return this.model.tokenize(text, { addSpecial: false, parseSpecial: true });
  }

  encode(text: string, addSpecial: boolean): number[] {
    return this.model.tokenize(text, { addSpecial, parseSpecial: true });
  }

  tokenId(piece: string): number | undefined {
    this.#pieceIds ??= new Map(this.#spelled.map((b, id) => [utf8.decode(b), id]));
    return this.#pieceIds.get(piece);
  }

  decode(ids: number[]): string {
    let n = 0;
    for (const id of ids) n += this.#text[id]?.length ?? 0;
    const out = new Uint8Array(n);
    n = 0;
    for (const id of ids) {
      const b = this.#text[id];
      if (b) out.set(b, n), n += b.length;
    }
    return utf8.decode(out);
  }

  tokenText(id: number): { text: string; bytes: number[] } {
    const bytes = [...(this.#spelled[id] ?? [])];
    return { text: tokenDisplayText(bytes), bytes };
  }

  open(): SequenceId {
    const slot = this.#slots.find((s) => s.state === "free") ??
      this.#slots.filter((s) => s.state === "cached").sort((a, b) => a.closedAt - b.closedAt)[0];
    if (!slot) throw new Error("every llama.cpp sequence is in use");
    if (slot.state === "cached") this.#clear(slot);
    slot.state = "active";
    const handle = this.#nextHandle++;
    this.#handles.set(handle, slot);
    return handle;
  }

  fork(seq: SequenceId): SequenceId {
    const from = this.#slot(seq);
    const handle = this.open();
    const to = this.#handles.get(handle)!;
    if (from.tokens.length) this.ctx.seqCp(from.id, to.id, 0, -1);
    to.tokens = from.tokens.slice();
    return handle;
  }

  close(seq: SequenceId): void {
    const slot = this.#handles.get(seq);
    if (!slot) return;
    this.#handles.delete(seq);
    slot.state = slot.tokens.length ? "cached" : "free";
    slot.closedAt = ++this.#clock;
    // The prompt cache keeps the `parallel` latest closed sequences (llama-server keeps one per slot). More would
    // cost every decode: in one unified KV cache attention spans every cell in use, cached ones included
    // (measured: ~7 extra cached 190-token prompts cost 14% of Q4_0 decode on the bench model).
    const cached = this.#slots.filter((s) => s.state === "cached").sort((a, b) => b.closedAt - a.closedAt);
    for (const s of cached.slice(this.parallel)) this.#clear(s), s.state = "free";
  }

  busy(): boolean {
    return this.#handles.size > 0;
  }

  async prefill(seq: SequenceId, ids: number[]): Promise<{ logits: Float32Array; cachedTokens: number }> {
    const slot = this.#slot(seq);
    if (ids.length === 0) throw new Error("nothing to prefill");
    const target = slot.tokens.concat(ids);
    if (target.length > this.contextLength) {
      throw new Error(`${target.length} tokens exceed the context window (${this.contextLength})`);
    }
    const had = slot.tokens.length;
    // The longest cached prefix of the whole sequence, from any sequence; at least one token is decoded anew
    // (its logits are the answer).
    let best = slot;
    let bestLen = commonPrefix(slot.tokens, target);
    for (const s of this.#slots) {
      if (s === slot || s.state === "free") continue;
      const len = commonPrefix(s.tokens, target);
      if (len > bestLen) best = s, bestLen = len;
    }
    const reuse = Math.min(bestLen, target.length - 1);
    if (best === slot) {
      if (reuse < slot.tokens.length) this.ctx.seqRm(slot.id, reuse, -1);
    } else {
      this.#clear(slot);
      this.ctx.seqCp(best.id, slot.id, 0, reuse);
    }
    slot.tokens = target.slice(0, reuse);
    const rest = target.slice(reuse);
    const logits = await this.batcher.submit(slot.id, rest, reuse);
    slot.tokens.push(...rest);
    return { logits, cachedTokens: Math.max(0, reuse - had) };
  }

  async step(seq: SequenceId, token: number): Promise<Float32Array> {
    const slot = this.#slot(seq);
    if (slot.tokens.length >= this.contextLength) throw new Error("the context window is full");
    const logits = await this.batcher.submit(slot.id, [token], slot.tokens.length);
    slot.tokens.push(token);
    return logits;
  }

  /** The weights and the context (its KV cache is allocated whole at load, so this does not grow). */
  memoryBytes(): number {
    return this.model.bytes + this.ctx.bytes;
  }

  dispose(): Promise<void> {
    this.batcher.close(new Error("the model was unloaded"));
    this.ctx.free();
    this.model.free();
    return Promise.resolve();
  }

  #slot(seq: SequenceId): Slot {
    const s = this.#handles.get(seq);
    if (!s) throw new Error(`no sequence ${seq}`);
    return s;
  }

  #clear(slot: Slot): void {
    if (slot.tokens.length) this.ctx.seqRm(slot.id, 0, -1);
    slot.tokens = [];
  }

  /** Frees the cells of every closed sequence (the prompt cache) when the KV cache is full. */
  #evictCached(): boolean {
    let freed = false;
    for (const s of this.#slots) {
      if (s.state !== "cached") continue;
      this.#clear(s);
      s.state = "free";
      freed = true;
    }
    return freed;
  }
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
