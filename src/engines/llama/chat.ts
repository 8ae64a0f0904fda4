// Owns the chat backend on llama.cpp: a GGUF model and one context with a KV stream per slot (--parallel of
// them; a request's sequence gets a slot at its prefill, waiting for one when all are taken). Conversations
// render through the model's own chat template (GGUF metadata) with the same Jinja engine and message shapes
// as the transformers.js backend, and tokenize with libllama. Sequences map to
// llama.cpp sequence ids. The prompt cache is the KV cache itself: a closed sequence's cells stay in its slot
// (llama-server's way), and a later prompt that starts the same way (system prompt, tools, the conversation so
// far) takes that slot and reads only the rest; otherwise a prompt takes an empty slot, else the one left
// longest ago, whose cells then go; but it sits next to the running sequences, moving the cells held there to
// the slot it would have taken (see #moveNextToRunning). A running sequence's prefix is copied (its stream
// whole, then cut). Only the cells of a request that asked to keep its prompt cached (Anthropic's
// cache_control) are copied out to host memory (llama_state_seq_get_data) when their slot is taken, and
// restored from there. Copying every
// closed sequence out held up the model's thread at each request's end (~9 ms for ~300 cells of a 135M model
// on 2 CPU cores, the last token's delivery with it; a GPU's cells came back over the bus). A fork (n choices)
// shares its parent's slot: choices run one after
// another, and closing a fork cuts the slot back to the parent's tokens (a recurrent model's state cannot be
// cut: the fork saves the parent's and puts it back). Decoding goes through one
// DecodeBatcher, so concurrent sequences share each llama_decode.
import { Template } from "@huggingface/jinja";
import { ChatPromptError } from "../../errors.ts";
import { tokenDisplayText } from "../byte_level.ts";
import {
  type TemplateConventions,
  templateConventions,
  templateMessage,
  templateTool,
  toolsOnSystemMessage,
} from "../template_view.ts";
import type {
  ChatBackend,
  ChatMessage,
  ChatTool,
  ModelEntry,
  Placement,
  RenderOptions,
  RunAhead,
  RunAheadOptions,
  SampleKernel,
  SequenceId,
} from "../types.ts";
import { DecodeBatcher } from "./batch.ts";
import type { LlamaContext, LlamaModel } from "./ffi.ts";
import { aheadBuffers, TokenRun } from "./run_ahead.ts";

const ATTR_CONTROL = 1 << 3;

interface Slot {
  /** llama.cpp sequence id (and KV stream). */
  id: number;
  /** The tokens whose cells the KV cache holds for this sequence, in order from position 0. */
  tokens: number[];
  active: boolean;
  /**
   * Its cells are to be kept when the slot is taken by another prompt (the request marked its prompt for
   * caching): they are copied out to host memory then.
   */
  keep: boolean;
  /** When its last sequence closed (a count): the slot left longest ago gives up its cells first. */
  closed: number;
  /**
   * The batcher's decode count when a copy of a whole KV stream from or to this slot was queued (-1: never).
   * llama.cpp copies at the next llama_decode, so until then nothing may be restored into the slot (the copy
   * would overwrite it, or copy it out), nor saved from it (see #save).
   */
  copying: number;
}

/** What a SequenceId stands for. */
interface Handle {
  /** Bound at the first prefill. */
  slot: Slot | null;
  keep: boolean;
  /**
   * A fork: the parent, and the slot's length to cut back to when the fork closes (or, for a recurrent model,
   * the parent's state to put back).
   */
  fork?: { parent: Handle; length: number; saved?: Uint8Array };
  /** A parent while its fork is open (its slot holds the fork's tokens). */
  suspended: boolean;
  /** Its place among the prefills waiting for a slot. */
  waiter?: Waiter;
}

interface Waiter {
  resolve(slot: Slot): void;
  reject(e: Error): void;
}

/** A marked sequence's cells, copied out to host memory when its slot was taken by another prompt. */
interface Saved {
  tokens: number[];
  data: Uint8Array;
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
  /**
   * llama_decode runs on the worker's thread: the pipeline delivers a token's event before asking for the next
   * step, so the worker's message with it is scheduled before the round that step joins.
   */
  readonly stepsBlock = true;
  readonly batcher: DecodeBatcher;
  readonly sampleKernel: SampleKernel;
  /** Sequences meant to generate together (the model's queue admits this many jobs). */
  readonly parallel: number;

  readonly #slots: Slot[];
  readonly #handles = new Map<SequenceId, Handle>();
  /** Prefills waiting for a slot (a client that left may still hold one until its step ends). */
  readonly #waiting: Waiter[] = [];
  /** Marked prompts' cells in host memory, oldest first. */
  readonly #saved: Saved[] = [];
  /** Counts closes (Slot.closed). */
  #closes = 0;
  /** Bytes of one slot's KV stream (what a copy between slots moves), from the model's metadata; 0: unknown. */
  readonly #streamBytes: number;
  #nextHandle = 1;
  readonly #template: Template | null;
  readonly #special: Record<string, string>;
  /** The template splices tool-call arguments into text (template_view.ts). */
  #conv: TemplateConventions | undefined;
  /** Bytes of each token as text (control tokens: none). */
  readonly #text: Uint8Array[];
  /** Bytes of each token with control tokens spelled out (logprobs show them). */
  readonly #spelled: Uint8Array[];
  readonly #flags: Int32Array;
  readonly #placement: Placement;
  /** eosIds for the C loop. */
  readonly #eos: Int32Array;
  /** The sequence whose run ahead holds the context, if one does. */
  #aheadSeq: SequenceId | null = null;
  /** Whether runAhead grants a run at all (set at load from the threads and the placement). */
  aheadWhenAlone: boolean;

  constructor(
    readonly entry: ModelEntry,
    readonly model: LlamaModel,
    readonly ctx: LlamaContext,
    opts: {
      contextLength: number;
      nBatch: number;
      parallel: number;
      description: string;
      placement: Placement;
      /** Whether a lone stream may run ahead in C (placement.ts runAheadPays); default no. */
      runAhead?: boolean;
    },
  ) {
    this.#placement = opts.placement;
    this.aheadWhenAlone = opts.runAhead ?? false;
    this.parallel = opts.parallel;
    const info = model.info;
    this.vocabSize = info.nVocab;
    this.contextLength = opts.contextLength;
    this.#flags = model.tokenFlags();
    const eos = new Set<number>();
    this.#flags.forEach((f, t) => f & 1 && eos.add(t));
    if (info.eos >= 0) eos.add(info.eos);
    this.eosIds = eos;
    this.#eos = Int32Array.from(eos);
    this.#text = model.tokenPieces(false);
    this.#spelled = model.tokenPieces(true);
    this.chatTemplate = model.chatTemplate();
    this.#template = this.chatTemplate ? new Template(this.chatTemplate) : null;
    const piece = (id: number) => id >= 0 && id < info.nVocab ? utf8.decode(this.#spelled[id]) : undefined;
    this.#special = {};
    // Only what the file declares: llama.cpp fills in a default BOS (id 11 for BPE vocabularies) that a
    // template's `{{ bos_token }}` must not print.
    const bos = model.meta("tokenizer.ggml.bos_token_id") === undefined ? undefined : piece(info.bos);
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
    this.#streamBytes = kvStreamBytes(model, opts.contextLength);
    this.#slots = Array.from(
      { length: ctx.opts.nSeqMax },
      (_, id) => ({ id, tokens: [], active: false, keep: false, closed: 0, copying: -1 }),
    );
    this.batcher = new DecodeBatcher(ctx, opts.nBatch, info.nVocab, ctx.opts.uBatch);
    this.backend = opts.description;
    const sample = model.sym.lshim_sample;
    this.sampleKernel = (logits, temperature, topK, topP, rng) =>
      sample(logits, logits.length, temperature, topK, topP, rng);
  }

  /** Each token's bytes (null for control tokens, which are never text): the constraint vocabulary. */
  tokenBytes(): readonly (Uint8Array | null)[] {
    return this.#text.map((b, t) => (this.#flags[t] >> 8) & ATTR_CONTROL ? null : b);
  }

  render(messages: ChatMessage[], tools?: ChatTool[], opts: RenderOptions = {}): number[] {
    if (!this.#template) {
      throw new ChatPromptError("The model has no chat template (tokenizer.chat_template).");
    }
    let text: string;
    try {
      const template = this.#template;
      this.#conv ??= templateConventions((v) => template.render({ ...this.#special, ...v }));
      text = template.render({
        messages: toolsOnSystemMessage(
          this.chatTemplate!,
          messages.map((m) => templateMessage(m, this.#conv)),
          tools?.length ? tools.map(templateTool) : null,
        ),
        add_generation_prompt: true,
        tools: tools?.length ? tools.map(templateTool) : null,
        documents: null,
        ...this.#special,
        ...(opts.thinking === undefined ? {} : { enable_thinking: opts.thinking }),
        ...(opts.reasoningEffort === undefined ? {} : { reasoning_effort: opts.reasoningEffort }),
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

  open(opts: { keep?: boolean } = {}): SequenceId {
    // A new request: a stream running ahead goes back to rounds, which this one's prompt joins.
    void this.batcher.release();
    const handle = this.#nextHandle++;
    this.#handles.set(handle, { slot: null, keep: opts.keep === true, suspended: false });
    return handle;
  }

  /** The fork shares the slot: the parent is not used until the fork closes (the pipeline's choices). */
  fork(seq: SequenceId): SequenceId {
    const parent = this.#handle(seq);
    if (!parent.slot) throw new Error("a sequence is forked after its prefill");
    parent.suspended = true;
    const handle = this.#nextHandle++;
    this.#handles.set(handle, {
      slot: parent.slot,
      keep: parent.keep,
      fork: {
        parent,
        length: parent.slot.tokens.length,
        ...(this.model.recurrent ? { saved: this.ctx.saveSeq(parent.slot.id) } : {}),
      },
      suspended: false,
    });
    return handle;
  }

  close(seq: SequenceId): void {
    const h = this.#handles.get(seq);
    if (!h) return;
    // Its run ahead still writing cells (the pipeline ends it first; not expected): closed once it has ended.
    if (this.#aheadSeq === seq) return void this.batcher.release().then(() => this.close(seq));
    this.#handles.delete(seq);
    const slot = h.slot;
    if (!slot) {
      // Still waiting for a slot (its client left first): it stops waiting.
      if (h.waiter) {
        this.#waiting.splice(this.#waiting.indexOf(h.waiter), 1);
        h.waiter.reject(new Error("the sequence was closed"));
      }
      return;
    }
    if (h.fork) {
      // Back to the parent's tokens: the fork only added cells after them (a KV cache cuts them; a recurrent
      // state is put back as it was: its own stream, so there is room).
      const { length, saved } = h.fork;
      if (saved) this.ctx.seqRm(slot.id, 0, -1), this.ctx.restoreSeq(slot.id, saved);
      else if (slot.tokens.length > length) this.ctx.seqRm(slot.id, length, -1);
      slot.tokens.length = length;
      h.fork.parent.suspended = false;
      return;
    }
    // Its cells stay: the slot's next prompt reuses what of them it starts with.
    slot.closed = ++this.#closes;
    this.#release(slot);
  }

  /** The slot to the next prefill waiting for one, or free. */
  #release(slot: Slot): void {
    slot.active = false;
    this.#waiting.shift()?.resolve(slot);
  }

  /**
   * Copies a marked sequence's cells to host memory as its slot is taken by another prompt: the `parallel`
   * latest are kept, so unmarked traffic taking every slot does not push a marked prompt out. A saved prefix
   * of the new one (the same conversation, one turn earlier) is dropped: the new one covers it.
   */
  #save(slot: Slot): void {
    // A copy into it still queued: its data is not yet what its tokens say (it goes unsaved; not expected).
    if (slot.copying === this.batcher.decodes) return;
    const tokens = slot.tokens;
    for (let i = this.#saved.length - 1; i >= 0; i--) {
      const old = this.#saved[i].tokens;
      if (old.length <= tokens.length && commonPrefix(old, tokens) === old.length) this.#saved.splice(i, 1);
    }
    this.#saved.push({ tokens, data: this.ctx.saveSeq(slot.id) });
    if (this.#saved.length > this.parallel) this.#saved.splice(0, this.#saved.length - this.parallel);
  }

  /** How many running sequences' ids are next to each slot's (llama.cpp decodes consecutive ids together). */
  #neighbours(): (s: Slot) => number {
    const running = new Set(this.#slots.filter((s) => s.active).map((s) => s.id));
    return (s) => Number(running.has(s.id - 1)) + Number(running.has(s.id + 1));
  }

  /**
   * The slot a prompt takes instead of `pick` (empty, or the one left longest ago): an idle one next to more
   * running sequences, whose cells move to `pick` (whose own go, as they were to). llama.cpp computes a round
   * over KV streams in micro-batches of consecutive sequence ids only (llama_batch_allocr::split_equal), so
   * each gap between the ids decoded together is one more pass over the weights at every step (8 streams of
   * the SmolLM2-shaped Q4_0 file, 2 CPU threads: 30-37 ms a step with ids 0-7, 58-63 ms with 0, 2, ..., 14),
   * and least recent use alone scatters the ids as requests of different lengths come and go. Moving keeps
   * the prompt cache's order (a conversation between two turns keeps its cells) at the cost of one copy of a
   * KV stream, done only when that costs less than a pass over the weights (one step's saving: a SmolLM2-135M
   * stream of 2048 cells is 47 MB against 145 MB of Q8_0 weights). Not for a
   * recurrent state or marked cells (they go to host memory). Copies queued in one round chain safely (llama.cpp
   * makes them in order): a burst's prompts each move a neighbour's cells, possibly into a slot just moved into.
   */
  #moveNextToRunning(pick: Slot, idle: readonly Slot[], next: (s: Slot) => number): Slot {
    if (this.model.recurrent || !this.#streamBytes || this.#streamBytes > this.model.bytes) return pick;
    const from = idle.filter((s) => s !== pick && s.tokens.length && !s.keep);
    const move = from.length ? nextToRunning(from, next, true) : undefined;
    if (!move || next(move) <= next(pick)) return pick;
    if (pick.keep && pick.tokens.length) this.#save(pick);
    this.ctx.seqCp(move.id, pick.id, 0, -1);
    pick.tokens = move.tokens.slice();
    pick.closed = move.closed;
    pick.keep = false;
    pick.copying = move.copying = this.batcher.decodes;
    return move;
  }

  busy(): boolean {
    return this.#handles.size > 0;
  }

  /**
   * A free slot now, or the next one freed: one whose cells `ids` starts with whole (nothing of them is lost),
   * else an empty one, else one whose cells `ids` starts best with (worth keeping, as for a copy; prefixes less
   * than a copy's worth shorter count as equal), else the one left longest ago; among equals, the slot next to
   * the most running sequences. Then, unless the choice holds a prefix it reads in place, a slot next to more
   * running sequences is taken instead, its cells moved to the chosen one (see #moveNextToRunning). Marked
   * cells that `ids` does not start with are copied out before they go.
   */
  #acquire(h: Handle, ids: readonly number[]): Slot | Promise<Slot> {
    const bind = (slot: Slot) => {
      if (slot.keep && commonPrefix(slot.tokens, ids) < slot.tokens.length) this.#save(slot);
      slot.active = true;
      slot.keep = h.keep;
      h.slot = slot;
      return slot;
    };
    const idle = this.#slots.filter((s) => !s.active);
    if (idle.length) {
      const onGpu = this.#placement.gpuLayers > 0;
      let whole: Slot | undefined;
      const parts: { slot: Slot; len: number }[] = [];
      for (const s of idle) {
        const len = commonPrefix(s.tokens, ids);
        if (len === s.tokens.length && len > 0) {
          if (!whole || len > whole.tokens.length) whole = s;
        } else if (len > 0 && worthCopying(len, s.tokens.length, onGpu)) parts.push({ slot: s, len });
      }
      if (whole) return bind(whole);
      const next = this.#neighbours();
      const empty = idle.filter((s) => s.tokens.length === 0);
      if (!empty.length && parts.length) {
        // Prefixes that differ by fewer tokens than a copy is worth count as one: a burst's prompts "request
        // 6001" and "request 6013" share a digit more with some slots than with others, and following those
        // digits scattered the burst's ids (slots 2, 3, 10-15: its 8 streams decoded ~35% slower than in 8-15).
        const top = Math.max(...parts.map((p) => p.len));
        const near = parts.filter((p) => !worthCopying(top - p.len, p.slot.tokens.length, onGpu));
        return bind(nextToRunning(near.map((p) => p.slot), next));
      }
      const oldest = Math.min(...idle.map((s) => s.closed));
      const pick = nextToRunning(empty.length ? empty : idle.filter((s) => s.closed === oldest), next);
      return bind(this.#moveNextToRunning(pick, idle, next));
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (slot: Slot) => {
          h.waiter = undefined;
          resolve(bind(slot));
        },
        reject,
      };
      h.waiter = waiter;
      this.#waiting.push(waiter);
    });
  }

  async prefill(seq: SequenceId, ids: number[]): Promise<{ logits: Float32Array; cachedTokens: number }> {
    // Slots are read and cells copied or cut below: no run ahead may be writing cells then.
    if (this.batcher.held) await this.batcher.release();
    const h = this.#handle(seq);
    // A slot just taken may hold an earlier sequence's cells: none of them are this sequence's own.
    const taken = !h.slot;
    if (!h.slot) await this.#acquire(h, ids);
    // Closed as its slot came (close released the slot).
    if (!this.#handles.has(seq)) throw new Error("the sequence was closed");
    const slot = this.#slot(seq);
    if (ids.length === 0) throw new Error("nothing to prefill");
    const own = taken ? [] : slot.tokens;
    const target = own.concat(ids);
    if (target.length > this.contextLength) {
      throw new Error(`${target.length} tokens exceed the context window (${this.contextLength})`);
    }
    const had = own.length;
    // The longest prefix of the whole sequence held anywhere: the slot's own cells (this sequence's, or those
    // an earlier one left, when worth keeping), another slot's (copied), or host memory (restored). At least
    // one token is decoded anew (its logits are the answer).
    let running: Slot | undefined;
    let saved: Saved | undefined;
    const onGpu = this.#placement.gpuLayers > 0;
    // The slot's own cells cost nothing to keep, however few: a chat template's opening is in every slot a
    // conversation used, and llama-server reads a new prompt on from whatever prefix its slot holds too (a
    // prefix under a copy's worth, such as an opening without a long default system message, was read anew).
    const kept = commonPrefix(slot.tokens, target);
    let best = kept;
    // Another slot's cells copy as a whole stream: worth what they add to the slot's own prefix, not their
    // length (a burst's prompts "request 6001 ..." and "request 6002 ..." share the template and a digit more
    // with a running stream than with their own slot: each copied a whole 2048-cell stream, 47 MB, for two
    // tokens, in the round that reads them). A saved state (a marked prompt, asked to be kept) holds only its
    // own cells.
    for (const s of this.#slots) {
      const len = s !== slot ? commonPrefix(s.tokens, target) : 0;
      if (len > best && worthCopying(len - kept, s.tokens.length, onGpu)) best = len, running = s;
    }
    // A restore writes the slot's data at once, before a queued copy from or to it would (see Slot.copying).
    for (const c of slot.copying === this.batcher.decodes ? [] : this.#saved) {
      const len = commonPrefix(c.tokens, target);
      if (len > best && worthCopying(len, c.tokens.length, onGpu)) best = len, saved = c, running = undefined;
    }
    let reuse = Math.min(best, target.length - 1);
    // Whatever is held past the prefix is cut; a memory that cannot cut (a recurrent state) reads it all.
    const cut = () => {
      if (this.ctx.seqRm(slot.id, reuse, -1)) return;
      this.ctx.seqRm(slot.id, 0, -1);
      reuse = 0;
    };
    if (running || saved) {
      this.#clear(slot);
      // Another stream's cells copy only whole (then cut to the prefix).
      if (running) this.ctx.seqCp(running.id, slot.id, 0, -1), cut();
      else if (this.ctx.restoreSeq(slot.id, saved!.data)) cut();
      else reuse = 0; // no room to restore into: read it all
    } else if (reuse < slot.tokens.length) {
      cut();
    }
    slot.tokens = target.slice(0, reuse);
    const rest = target.slice(reuse);
    let logits: Float32Array;
    try {
      logits = await this.batcher.submit(slot.id, rest, reuse);
    } catch (e) {
      // A later chunk failed: the earlier chunks' cells are in the cache but not in `slot.tokens`, so nothing
      // else would remove them before the slot's next sequence. (Everything goes: a copy from another stream
      // may not have happened, llama.cpp copies at its next decode.)
      this.ctx.seqRm(slot.id, 0, -1);
      slot.tokens = [];
      throw e;
    }
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

  /**
   * The choice's next tokens drawn and decoded in C (lshim_run_ahead) while this is the only sequence and the
   * batcher has nothing else to do: no JavaScript between two decodes. Any other request stops it (open, and
   * the batcher on any submit). Not for a recurrent model (the cells past a stop sequence could not be cut),
   * nor where the decode takes every core (aheadWhenAlone).
   */
  runAhead(seq: SequenceId, token: number, opts: RunAheadOptions): RunAhead | null {
    if (!this.aheadWhenAlone || this.model.recurrent || this.#handles.size !== 1) return null;
    const slot = this.#slot(seq);
    const pos = slot.tokens.length;
    const cap = Math.min(opts.limit, this.contextLength - pos);
    if (cap < 1) return null;
    const buf = aheadBuffers(cap, opts.rng);
    const masked = Math.min(cap, Math.max(0, opts.masked));
    let run: TokenRun | undefined;
    const held = this.batcher.hold(() => {
      const done = this.ctx.runAhead(
        slot.id,
        token,
        pos,
        opts.sampling,
        this.#eos,
        masked,
        opts.stopOnEos,
        buf,
      );
      run = new TokenRun(
        buf,
        opts.rng,
        done,
        (decodes) => {
          // The cells written: `token` and every draw but the last.
          if (decodes > 0) slot.tokens.push(token, ...buf.tokens.subarray(0, decodes - 1));
          this.#aheadSeq = null;
        },
        (taken) => {
          // As if the pipeline had drawn `taken` itself: `token` and the draws before the last taken fed.
          const keep = pos + Math.max(1, taken);
          if (slot.tokens.length > keep) this.ctx.seqRm(slot.id, keep, -1), slot.tokens.length = keep;
        },
      );
      return { stop: () => run!.stop(), done };
    });
    if (!held || !run) return null;
    this.#aheadSeq = seq;
    return run;
  }

  /**
   * Host memory: the weights, the context (its KV cache is allocated whole at load) and the prompt cache's
   * saved cells, less what of them is in GPU memory (placement()).
   */
  memoryBytes(): number {
    return this.model.bytes + this.ctx.bytes - this.#placement.gpuBytes +
      this.#saved.reduce((n, c) => n + c.data.length, 0);
  }

  placement(): Placement {
    return this.#placement;
  }

  async dispose(): Promise<void> {
    const gone = new Error("the model was unloaded");
    for (const w of this.#waiting.splice(0)) w.reject(gone);
    await this.batcher.release();
    this.batcher.close(gone);
    this.ctx.free();
    this.model.free();
  }

  #handle(seq: SequenceId): Handle {
    const h = this.#handles.get(seq);
    if (!h) throw new Error(`no sequence ${seq}`);
    return h;
  }

  #slot(seq: SequenceId): Slot {
    const h = this.#handle(seq);
    if (!h.slot) throw new Error(`sequence ${seq} has no prefill yet`);
    if (h.suspended) throw new Error(`sequence ${seq} is forked: its fork holds the slot`);
    return h.slot;
  }

  #clear(slot: Slot): void {
    if (slot.tokens.length) this.ctx.seqRm(slot.id, 0, -1);
    slot.tokens = [];
  }
}

/**
 * A KV stream's bytes: `cells` cells of every layer's keys and values at f16 (llama.cpp's default cache type),
 * from the GGUF's attention shape; 0 when the metadata does not give it as plain numbers.
 */
export function kvStreamBytes(model: LlamaModel, cells: number): number {
  const arch = model.meta("general.architecture");
  const n = (key: string) => {
    const v = model.meta(`${arch}.${key}`);
    return v === undefined || v.trim() === "" ? NaN : Number(v);
  };
  const heads = n("attention.head_count");
  const kvHeads = Number.isNaN(n("attention.head_count_kv")) ? heads : n("attention.head_count_kv");
  const k = Number.isNaN(n("attention.key_length"))
    ? n("embedding_length") / heads
    : n("attention.key_length");
  const v = Number.isNaN(n("attention.value_length")) ? k : n("attention.value_length");
  const bytes = 2 * n("block_count") * kvHeads * (k + v) * cells;
  return Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
}

/**
 * Of `slots`, the one next to the most running sequences (`next`); among those the lowest id, or with `byAge`
 * the one left longest ago.
 */
function nextToRunning(slots: readonly Slot[], next: (s: Slot) => number, byAge = false): Slot {
  return slots.reduce((a, b) => {
    const d = next(b) - next(a);
    if (d !== 0) return d > 0 ? b : a;
    if (byAge && b.closed !== a.closed) return b.closed < a.closed ? b : a;
    return b.id < a.id ? b : a;
  });
}

/**
 * Whether `len` tokens of a prefix are worth copying `held` cells for (another stream's cells copy whole, a
 * saved state restores whole, and then both are cut to the prefix): when the prefix is at least half of what
 * is copied, or long anyway. Prompts that share only a chat template's opening (a few tokens) read anew: on a
 * GPU a 7B model's 300 saved cells are ~35 MB copied from host memory for 3 tokens' work, which its GPU reads
 * in well under the copy's time (llama-server, too, reuses a slot's cells only for a prompt at least half
 * similar). On a CPU reading is slow and a copy is a memcpy: 32 tokens are worth any copy.
 */
export function worthCopying(len: number, held: number, onGpu: boolean): boolean {
  return len * 2 >= held || len >= (onGpu ? 256 : 32);
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
