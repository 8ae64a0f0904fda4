// Owns the wire schema of the legacy POST /v1/completions (OpenAI's CreateCompletionRequest): `prompt` as a
// string, strings, token ids or lists of token ids; the sampling fields with OpenAI's ranges; `logprobs` as
// the legacy count (0..5); `echo`, `suffix`, `best_of` (only equal to n: nothing here ranks extra samples),
// and the same vLLM-style extensions as chat (`top_k`, `min_tokens`, `ignore_eos`).
import { z } from "zod";
import { refineStopAndBias } from "./chat.ts";

const nullable = <T extends z.ZodType>(t: T) => t.nullable().optional();
const TokenId = z.number().int().min(0);

export const CompletionPrompt = z.union([
  z.string(),
  z.array(z.string()).min(1),
  z.array(TokenId).min(1),
  z.array(z.array(TokenId).min(1)).min(1),
]);

export const CompletionRequest = z.looseObject({
  model: z.string(),
  prompt: CompletionPrompt,
  suffix: nullable(z.string()),
  // OpenAI's default for this endpoint is 16 tokens.
  max_tokens: nullable(z.number().int().min(0)),
  temperature: nullable(z.number().min(0).max(2)),
  top_p: nullable(z.number().min(0).max(1)),
  n: nullable(z.number().int().min(1).max(128)),
  best_of: nullable(z.number().int().min(1).max(128)),
  stream: nullable(z.boolean()),
  stream_options: nullable(z.looseObject({ include_usage: z.boolean().optional() })),
  logprobs: nullable(z.number().int().min(0).max(5)),
  echo: nullable(z.boolean()),
  stop: nullable(z.union([z.string(), z.array(z.string())])),
  presence_penalty: nullable(z.number().min(-2).max(2)),
  frequency_penalty: nullable(z.number().min(-2).max(2)),
  logit_bias: nullable(z.record(z.string(), z.number().min(-100).max(100))),
  seed: nullable(z.number().refine(Number.isInteger, "must be an integer")),
  user: z.string().optional(),
  top_k: nullable(z.number().int().min(-1)),
  min_tokens: nullable(z.number().int().min(0)),
  ignore_eos: nullable(z.boolean()),
}).superRefine((r, ctx) => {
  refineStopAndBias(r, ctx);
  if (r.best_of != null && r.best_of !== (r.n ?? 1)) {
    ctx.addIssue({
      code: "custom",
      path: ["best_of"],
      message: "best_of must equal n: this server returns every sample it draws and ranks none.",
    });
  }
});

export type CompletionRequest = z.output<typeof CompletionRequest>;
