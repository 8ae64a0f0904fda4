// Owns the transformers.js embedding backend: loading a feature-extraction model (tokenizer + ONNX graph) from
// a manifest entry on the runtime of this thread (a model's worker, src/workers/), and running one padded
// batch of token ids through it with the model's own pooling and normalization. Batching across requests is the API layer's business (batcher.ts).
import type { Engine, LoadContext, ModelEntry } from "../types.ts";
import { ModelFilesMissing } from "../../errors.ts";
import { spinOf, type TransformersModule, transformersRuntime } from "./runtime.ts";
import {
  embeddingModelFileName,
  ensureEmbeddingFiles,
  maxTokensOf,
  missingMessage,
  readPooling,
  requiredFiles,
} from "./embedding_files.ts";
import { pool, type PoolingSpec } from "./embedding_pooling.ts";
import { filesBytes, onnxWeightFiles } from "./weights.ts";

type Tokenizer = Awaited<ReturnType<TransformersModule["AutoTokenizer"]["from_pretrained"]>>;
type Model = Awaited<ReturnType<TransformersModule["AutoModel"]["from_pretrained"]>>;
type Tensor = InstanceType<TransformersModule["Tensor"]>;

export interface EmbeddingParts {
  tf: TransformersModule;
  tokenizer: Tokenizer;
  model: Model;
  pooling: PoolingSpec;
  maxTokens: number;
  vocabSize: number;
  padId: number;
  backend: string;
  /** Bytes of the ONNX files loaded (the dtype's graph and external data). */
  weightsBytes?: number;
}

export class TransformersEmbedding implements Engine {
  readonly backend: string;
  readonly maxTokens: number;
  readonly vocabSize: number;
  readonly normalized: boolean;
  readonly pooling: PoolingSpec;
  #dimensions = 0;
  #parts: EmbeddingParts;

  constructor(readonly entry: ModelEntry, parts: EmbeddingParts) {
    this.#parts = parts;
    this.backend = parts.backend;
    this.maxTokens = parts.maxTokens;
    this.vocabSize = parts.vocabSize;
    this.pooling = parts.pooling;
    this.normalized = parts.pooling.normalize;
  }

  get dimensions(): number {
    return this.#dimensions;
  }

  /** Runs one tiny input so the output width is measured, not guessed, and the first request is not slow. */
  async warmUp(): Promise<void> {
    const [v] = await this.embedBatch([this.tokenize("warm up")]);
    this.#dimensions = v.length;
  }

  tokenize(text: string): number[] {
    return this.#parts.tokenizer.encode(text, { add_special_tokens: true });
  }

  #inFlight = 0;

  busy(): boolean {
    return this.#inFlight > 0;
  }

  async embedBatch(inputs: readonly (readonly number[])[]): Promise<Float32Array[]> {
    if (inputs.length === 0) return [];
    this.#inFlight++;
    try {
      return await this.#embed(inputs);
    } finally {
      this.#inFlight--;
    }
  }

  async #embed(inputs: readonly (readonly number[])[]): Promise<Float32Array[]> {
    const { tf, model, padId } = this.#parts;
    const batch = inputs.length;
    const seq = Math.max(...inputs.map((ids) => ids.length));
    // Right padding: real tokens keep positions 0..n-1 and the mask hides the rest.
    const ids = new BigInt64Array(batch * seq).fill(BigInt(padId));
    const mask = new BigInt64Array(batch * seq);
    inputs.forEach((row, b) => {
      for (let t = 0; t < row.length; t++) {
        ids[b * seq + t] = BigInt(row[t]);
        mask[b * seq + t] = 1n;
      }
    });
    const feeds = {
      input_ids: new tf.Tensor("int64", ids, [batch, seq]),
      attention_mask: new tf.Tensor("int64", mask, [batch, seq]),
    };
    const out = (await model(feeds)) as Record<string, Tensor>;
    const states = out.last_hidden_state ?? out.token_embeddings ?? out.logits;
    if (!states || states.dims.length !== 3) {
      throw new Error(
        `model ${this.entry.id} gave no token states (outputs: ${Object.keys(out).join(", ")})`,
      );
    }
    const f32 = states.type === "float32" ? states : states.to("float32");
    const data = f32.data as Float32Array;
    const vectors = pool(data, batch, seq, states.dims[2], inputs.map((r) => r.length), this.pooling);
    for (const t of Object.values(out)) t.dispose?.();
    return vectors;
  }

  /** The loaded weights (activations live only during a call). */
  memoryBytes(): number {
    return this.#parts.weightsBytes ?? 0;
  }

  async dispose(): Promise<void> {
    await this.#parts.model.dispose();
  }
}

/** Loads the transformers.js embedding backend of an entry on this thread. */
export async function loadEmbedding(entry: ModelEntry, ctx: LoadContext): Promise<TransformersEmbedding> {
  const dir = await ensureEmbeddingFiles(entry, ctx.allowRemote, {
    hub: ctx.hub,
    log: (line) => ctx.log.info(line, { model: entry.id }),
  });
  const rt = await transformersRuntime(entry.device, ctx.log);
  const { tf } = rt;
  const opts = { local_files_only: true };
  const dtype = entry.dtype ?? "fp32";
  const fileName = embeddingModelFileName(entry);
  // Read before the (slow) graph load so an unsupported pipeline fails fast.
  const pooling = readPooling(dir, entry.options.pooling);
  let tokenizer: Tokenizer;
  let model: Model;
  try {
    tokenizer = await tf.AutoTokenizer.from_pretrained(dir, opts);
    model = await tf.AutoModel.from_pretrained(dir, {
      ...opts,
      dtype: dtype as never,
      ...(fileName !== "model" ? { model_file_name: fileName } : {}),
      device: rt.device,
      session_options: rt.sessionOptions(
        entry.device,
        ctx.threads,
        false,
        spinOf(entry.options.ort_spinning),
      ),
    });
  } catch (e) {
    if ((e as Error).name === "ModelFileNotFoundError" || e instanceof Deno.errors.NotFound) {
      throw new ModelFilesMissing(
        `${missingMessage(entry, dir, requiredFiles(dtype, fileName), ctx.allowRemote)} (${
          (e as Error).message
        })`,
      );
    }
    throw e;
  }
  const config = model.config as unknown as Record<string, unknown>;
  const vocab = Number(config.vocab_size) || Object.keys(tokenizer.get_vocab()).length;
  const padId = tokenizer.pad_token_id ?? Number(config.pad_token_id ?? 0);
  const engine = new TransformersEmbedding(entry, {
    tf,
    tokenizer,
    model,
    pooling,
    maxTokens: maxTokensOf(tokenizer.model_max_length, Number(config.max_position_embeddings) || undefined),
    vocabSize: vocab,
    padId: Number.isInteger(padId) ? padId : 0,
    backend: `${rt.backend} ${dtype}${fileName === "model" ? "" : ` (${fileName})`}`,
    weightsBytes: filesBytes(onnxWeightFiles(dir, dtype, fileName)),
  });
  try {
    await engine.warmUp();
  } catch (e) {
    await engine.dispose().catch(() => {});
    throw e;
  }
  ctx.log.info("embedding model ready", {
    model: entry.id,
    dimensions: engine.dimensions,
    maxTokens: engine.maxTokens,
    pooling: engine.pooling.modes.join("+"),
    normalize: engine.pooling.normalize,
    poolingFrom: engine.pooling.source,
  });
  return engine;
}
