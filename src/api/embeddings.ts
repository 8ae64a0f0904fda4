// Owns POST /v1/embeddings: the wire request -> per-request checks that need the model (length, vocabulary,
// dimensions) -> the model's dynamic batcher -> OpenAI's response shape (float or base64 vectors, usage).
// Every check runs before a request joins a batch, so one request's bad input never fails another's.
import { Buffer } from "node:buffer";
import { DynamicBatcher } from "../engines/batcher.ts";
import type { EmbeddingEngine, ModelEntry } from "../engines/types.ts";
import { truncateAndNormalize } from "../engines/transformers/embedding_pooling.ts";
import { readJson } from "../http/body.ts";
import { ApiError } from "../http/errors.ts";
import {
  CreateEmbeddingRequest,
  type CreateEmbeddingResponse,
  type EmbeddingInputs,
} from "../protocol/embeddings.ts";
import { parseRequest } from "../protocol/validate.ts";
import { type FieldPolicy, reportIgnored } from "./ignored.ts";

/** What this route acts on (src/api/ignored.ts); `user` is accepted and reported, anything else is a 400. */
export const EMBEDDING_FIELDS: FieldPolicy = {
  honoured: new Set(["model", "input", "encoding_format", "dimensions"]),
};
import type { ApiContext } from "./context.ts";

type Batcher = DynamicBatcher<readonly number[], Float32Array>;

/**
 * Inputs that run without waiting out the batch window. On CPU a call's fixed cost is about that of one or two
 * inputs, so at 32 inputs waiting for company could win at most a few percent and would cost the window.
 */
const EAGER_INPUTS = 32;

/** The model's batcher, from the registry's admission (one per loaded engine). */
function batcherFor(ctx: ApiContext, entry: ModelEntry, engine: EmbeddingEngine): Batcher {
  return ctx.registry.admission.batcher(entry.id, engine, (maxWaiting): Batcher =>
    new DynamicBatcher({
      name: entry.id,
      windowMs: ctx.config.embedBatchWindowMs,
      budget: ctx.config.embedBatchTokens,
      eagerItems: EAGER_INPUTS,
      maxWaiting,
      cost: (ids) => ids.length,
      run: (items) => engine.embedBatch(items),
      onBatch: (info) => ctx.log.debug("embedding batch", { model: entry.id, ...info }),
    }));
}

/** Characters per allowed token beyond which a text is first measured by a prefix (see `tokenizeText`). */
const CHARS_PER_TOKEN_GATE = 16;

function tooLong(param: string, model: string, max: number, length: string): ApiError {
  return ApiError.badRequest(
    `Invalid '${param}': it is ${length} tokens long, but model \`${model}\` accepts at most ${max} tokens ` +
      `per input. Shorten or split it.`,
    param,
    "context_length_exceeded",
  );
}

/**
 * Tokenizes texts (in the model's worker), refusing a far too long one cheaply: tokenizing megabytes takes
 * seconds, so a text much longer (in characters) than the model's limit is first measured by a prefix cut at
 * whitespace, whose tokens are a subset of the whole text's; if that prefix is already too long, so is the text.
 */
async function tokenizeTexts(
  texts: string[],
  engine: EmbeddingEngine,
  model: string,
  param: (i: number) => string,
  signal?: AbortSignal,
): Promise<number[][]> {
  const gate = engine.maxTokens * CHARS_PER_TOKEN_GATE;
  const gated: { i: number; prefix: string }[] = [];
  texts.forEach((text, i) => {
    if (text.length <= gate) return;
    const cut = text.slice(0, gate).search(/\s\S*$/);
    if (cut > 0) gated.push({ i, prefix: text.slice(0, cut) });
  });
  if (gated.length) {
    const lengths = (await engine.tokenize(gated.map((g) => g.prefix), signal)).map((ids) => ids.length);
    gated.forEach((g, k) => {
      if (lengths[k] > engine.maxTokens) {
        throw tooLong(param(g.i), model, engine.maxTokens, `more than ${lengths[k]}`);
      }
    });
  }
  return await engine.tokenize(texts, signal);
}

/** The token ids of every input as the model sees them; throws the 400 that names the first bad item. */
export async function tokenizeInputs(
  input: EmbeddingInputs,
  engine: EmbeddingEngine,
  model: string,
  signal?: AbortSignal,
): Promise<number[][]> {
  const param = (i: number) => (input.single ? "input" : `input[${i}]`);
  const ids = input.kind === "text"
    ? await tokenizeTexts(input.texts, engine, model, param, signal)
    : input.ids;
  ids.forEach((row, i) => {
    if (row.length === 0) {
      throw ApiError.badRequest(`Invalid '${param(i)}': it has no tokens for model \`${model}\`.`, param(i));
    }
    if (row.length > engine.maxTokens) throw tooLong(param(i), model, engine.maxTokens, String(row.length));
    if (input.kind === "tokens") {
      const j = row.findIndex((id) => id >= engine.vocabSize);
      if (j >= 0) {
        const at = input.single ? `input[${j}]` : `input[${i}][${j}]`;
        throw ApiError.badRequest(
          `Invalid '${at}': token id ${row[j]} is outside the vocabulary of model \`${model}\` ` +
            `(ids 0 to ${engine.vocabSize - 1}).`,
          at,
          "invalid_value",
        );
      }
    }
  });
  return ids;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Base64 of the vector's little-endian float32 bytes (what the SDKs decode). */
export function toBase64(v: Float32Array): string {
  let bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (!LITTLE_ENDIAN) {
    const view = new DataView(new ArrayBuffer(v.byteLength));
    v.forEach((x, i) => view.setFloat32(i * 4, x, true));
    bytes = new Uint8Array(view.buffer);
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

export async function handleEmbeddings(req: Request, ctx: ApiContext): Promise<Response> {
  const request = parseRequest(CreateEmbeddingRequest, await readJson(req, ctx.jsonLimits));
  reportIgnored(req, ctx, request, EMBEDDING_FIELDS);
  const entry = ctx.registry.resolve(request.model, "embedding");
  const engine = await ctx.registry.engine<EmbeddingEngine>(entry, ctx.signal, ctx.defer);
  const dims = request.dimensions ?? undefined;
  if (dims !== undefined && dims > engine.dimensions) {
    throw ApiError.badRequest(
      `Invalid 'dimensions': model \`${request.model}\` gives ${engine.dimensions}-dimensional embeddings, ` +
        `so dimensions must be between 1 and ${engine.dimensions}, but got ${dims}.`,
      "dimensions",
      "invalid_value",
    );
  }
  const ids = await tokenizeInputs(request.input, engine, request.model, ctx.signal);
  const promptTokens = ids.reduce((n, row) => n + row.length, 0);
  ctx.note({ model: entry.id, promptTokens });
  const vectors = await batcherFor(ctx, entry, engine).submit(ids, ctx.signal);
  const base64 = request.encoding_format === "base64";
  const body: CreateEmbeddingResponse = {
    object: "list",
    data: vectors.map((v, index) => {
      const out = dims !== undefined ? truncateAndNormalize(v, dims) : v;
      return { object: "embedding", index, embedding: base64 ? toBase64(out) : Array.from(out) };
    }),
    model: request.model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
  return Response.json(body);
}
