// Owns the wire schema of POST /v1/embeddings (OpenAI's CreateEmbeddingRequest): every `input` form (a string,
// strings, token ids, arrays of token ids) checked item by item so a 400 names the bad item (`input[3]`), and
// normalized to either texts or token-id lists. Model-dependent limits (length, vocabulary, dimensions) are
// checked by the API module once the model is known.
import { z } from "zod";

/** OpenAI's limit on items per request. */
export const MAX_EMBEDDING_INPUTS = 2048;

/** The input normalized; `single` when it was one item (a string or one token array), not a list of them. */
export type EmbeddingInputs =
  | { kind: "text"; texts: string[]; single: boolean }
  | { kind: "tokens"; ids: number[][]; single: boolean };

type Ctx = z.core.$RefinementCtx<unknown>;

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "number") return Number.isInteger(v) ? "an integer" : "a decimal";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

const FORMS =
  "a string, an array of strings, an array of integers (token ids) or an array of arrays of integers";

function typeIssue(ctx: Ctx, path: (string | number)[], expected: string, input: unknown): void {
  ctx.addIssue({ code: "invalid_type", expected: expected as never, input, path });
}

function custom(ctx: Ctx, path: (string | number)[], message: string): void {
  ctx.addIssue({ code: "custom", message, path });
}

/** A token id: a non-negative integer (the vocabulary bound depends on the model). */
function checkTokenId(ctx: Ctx, path: (string | number)[], v: unknown): boolean {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
    if (typeof v === "number") custom(ctx, path, `token ids must be non-negative integers, but got ${v}.`);
    else typeIssue(ctx, path, "integer (a token id)", v);
    return false;
  }
  return true;
}

/** Checks one input against the form its first item chose; stops at the first bad item. */
function checkInput(v: unknown, ctx: Ctx): void {
  if (v === undefined || v === null) return typeIssue(ctx, [], FORMS, v);
  if (typeof v === "string") {
    if (v.length === 0) custom(ctx, [], "the input must not be an empty string.");
    return;
  }
  if (!Array.isArray(v)) return typeIssue(ctx, [], FORMS, v);
  if (v.length === 0) return custom(ctx, [], "the input must not be an empty array.");
  if (v.length > MAX_EMBEDDING_INPUTS) {
    ctx.addIssue({
      code: "too_big",
      origin: "array",
      maximum: MAX_EMBEDDING_INPUTS,
      inclusive: true,
      input: v,
      path: [],
      message: "too many inputs",
    });
    return;
  }
  const first = v[0];
  if (typeof first === "string") {
    for (let i = 0; i < v.length; i++) {
      if (typeof v[i] !== "string") return typeIssue(ctx, [i], "string", v[i]);
      if (v[i].length === 0) return custom(ctx, [i], "empty strings are not allowed as input.");
    }
  } else if (typeof first === "number") {
    for (let i = 0; i < v.length; i++) if (!checkTokenId(ctx, [i], v[i])) return;
  } else if (Array.isArray(first)) {
    for (let i = 0; i < v.length; i++) {
      const row = v[i];
      if (!Array.isArray(row)) return typeIssue(ctx, [i], "array of token ids", row);
      if (row.length === 0) return custom(ctx, [i], "empty token arrays are not allowed as input.");
      for (let j = 0; j < row.length; j++) if (!checkTokenId(ctx, [i, j], row[j])) return;
    }
  } else {
    custom(ctx, [0], `expected a string, an integer or an array of integers, but got ${describe(first)}.`);
  }
}

function normalizeInput(v: unknown): EmbeddingInputs {
  if (typeof v === "string") return { kind: "text", texts: [v], single: true };
  const arr = v as unknown[];
  if (typeof arr[0] === "string") return { kind: "text", texts: arr as string[], single: false };
  if (typeof arr[0] === "number") return { kind: "tokens", ids: [arr as number[]], single: true };
  return { kind: "tokens", ids: arr as number[][], single: false };
}

export const EmbeddingInput = z.unknown().superRefine(checkInput).transform(normalizeInput);

export const CreateEmbeddingRequest = z.strictObject({
  model: z.string().min(1),
  input: EmbeddingInput,
  encoding_format: z.enum(["float", "base64"]).nullish(),
  dimensions: z.number().int().min(1).nullish(),
  user: z.string().nullish(),
});

export type CreateEmbeddingRequest = z.output<typeof CreateEmbeddingRequest>;

/** One item of the response's `data`. */
export interface EmbeddingObject {
  object: "embedding";
  index: number;
  /** Floats, or base64 of their little-endian float32 bytes. */
  embedding: number[] | string;
}

export interface CreateEmbeddingResponse {
  object: "list";
  data: EmbeddingObject[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}
