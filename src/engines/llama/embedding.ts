// Owns embeddings on llama.cpp: a GGUF encoder (BERT-style) or decoder run with pooled outputs, using the
// pooling type the manifest or the GGUF declares (mean for decoders that declare none); several inputs go into one batch as separate sequences. Vectors come back
// L2-normalized, as llama-server and OpenAI return them.
import type { ModelEntry, Placement } from "../types.ts";
import { LlamaContext, type LlamaModel } from "./ffi.ts";
import { placementOf } from "./placement.ts";

/** Tokens per embedding batch (all inputs of one call together); also the longest input. */
const BATCH = 2048;
const MAX_SEQS = 64;

/** The worker-side embedding backend (the same surface as TransformersEmbedding). */
export class LlamaEmbedding {
  readonly backend: string;
  readonly dimensions: number;
  readonly maxTokens: number;
  readonly vocabSize: number;
  readonly normalized = true;
  readonly #ctx: LlamaContext;
  readonly #placement: Placement;
  /**
   * Tokens of one encode call. Every token of a call attends over all of the call's tokens (masked to its own
   * input), so attention grows with the call's size while the matrix products don't gain past a few hundred
   * rows: per layer it costs about n / (6 d) of the products (n tokens, d the embedding width). Calls of about
   * 2d tokens keep it near a third at most; measured on embed-tiny (d 64, 32 inputs of ~64 tokens together):
   * one call of 2050 tokens 55-67 ms, calls of up to 256 tokens 33 ms for the same inputs.
   */
  readonly #groupTokens: number;

  constructor(readonly entry: ModelEntry, readonly model: LlamaModel, threads: number) {
    this.dimensions = model.info.nEmbd;
    this.vocabSize = model.info.nVocab;
    this.maxTokens = Math.min(model.info.nCtxTrain || BATCH, BATCH);
    this.#groupTokens = Math.min(BATCH, Math.max(128, 2 * this.dimensions));
    this.#ctx = new LlamaContext(model, {
      nCtx: BATCH,
      nBatch: BATCH,
      nSeqMax: MAX_SEQS,
      threads,
      embeddings: true,
      pooling: poolingOf(entry, model),
      cpuOnly: model.offload === undefined || model.offload.layers === 0,
    });
    const pooling = POOLING[this.#ctx.pooling] ?? `type ${this.#ctx.pooling}`;
    this.#placement = placementOf(model, this.#ctx);
    this.backend = `llama.cpp ${this.#placement.device} ${pooling} pooling`;
  }

  /** The ids the model sees for a text, special tokens (CLS/SEP, BOS) included. */
  tokenize(text: string): number[] {
    return this.model.tokenize(text, { addSpecial: true, parseSpecial: false });
  }

  embedBatch(inputs: readonly (readonly number[])[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    let group: (readonly number[])[] = [];
    let tokens = 0;
    const flush = () => {
      if (!group.length) return;
      const got = this.#ctx.embed(group, this.dimensions);
      if (typeof got === "number") throw new Error(`llama.cpp could not embed the batch (${got})`);
      for (const v of got) out.push(normalize(v));
      group = [];
      tokens = 0;
    };
    for (const ids of inputs) {
      if (tokens + ids.length > this.#groupTokens || group.length === MAX_SEQS) flush();
      group.push(ids);
      tokens += ids.length;
    }
    flush();
    return Promise.resolve(out);
  }

  /** The weights and the context's buffers in host memory, as llama.cpp allocated them. */
  memoryBytes(): number {
    return this.model.bytes + this.#ctx.bytes - this.#placement.gpuBytes;
  }

  placement(): Placement {
    return this.#placement;
  }

  dispose(): Promise<void> {
    this.#ctx.free();
    this.model.free();
    return Promise.resolve();
  }
}

const POOLING = ["none", "mean", "cls", "last"];

/** The manifest's options.pooling, else the GGUF's `<arch>.pooling_type`, else mean (decoder GGUFs say none). */
function poolingOf(entry: ModelEntry, model: LlamaModel): number {
  const asked = entry.options.pooling;
  if (typeof asked === "string" && POOLING.indexOf(asked) > 0) return POOLING.indexOf(asked);
  const declared = Number(model.meta(`${model.meta("general.architecture")}.pooling_type`));
  return declared > 0 && declared < POOLING.length ? declared : 1;
}

function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) { for (let i = 0; i < v.length; i++) v[i] /= norm; }
  return v;
}
