// Owns Anthropic's error envelope for the routes that speak its wire format (/v1/messages and
// /v1/messages/count_tokens): `{"type":"error","error":{"type","message"},"request_id"}` with Anthropic's
// error types. Every error still goes through toApiError (errors.ts) first, so statuses are decided in one
// place; the only status this mapper changes is a full queue, which Anthropic answers with 529
// `overloaded_error` (Retry-After kept) instead of 429. Anthropic's envelope has no `param`, so the message
// names the parameter.
import { ApiError, toApiError } from "./errors.ts";

export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

export interface AnthropicError {
  status: number;
  type: AnthropicErrorType;
  message: string;
  headers: Record<string, string>;
}

function typeOf(status: number): AnthropicErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/** Anything thrown, as Anthropic's error (status, type, message naming the parameter). */
export function toAnthropicError(err: unknown): AnthropicError {
  const api = err instanceof ApiError ? err : toApiError(err);
  // A full model queue: Anthropic's "overloaded" (SDKs retry it), not a per-key rate limit.
  const status = api.code === "rate_limit_exceeded" && api.status === 429 ? 529 : api.status;
  const named = api.param && !api.message.includes(api.param) ? `${api.param}: ${api.message}` : api.message;
  return { status, type: typeOf(status), message: named, headers: api.headers };
}

/** The envelope, for HTTP bodies and for the stream's `error` event alike. */
export function anthropicErrorBody(e: AnthropicError, requestId?: string) {
  return {
    type: "error" as const,
    error: { type: e.type, message: e.message },
    ...(requestId ? { request_id: requestId } : {}),
  };
}

/** The HTTP response for anything thrown on an Anthropic route. */
export function anthropicErrorResponse(err: unknown, requestId?: string): Response {
  const e = toAnthropicError(err);
  return new Response(JSON.stringify(anthropicErrorBody(e, requestId)), {
    status: e.status,
    headers: { "content-type": "application/json", ...e.headers },
  });
}
