// Owns the one error type the HTTP layer throws (ApiError) and the one mapper that turns anything thrown
// (ApiError, the typed errors of the layers below from src/errors.ts, anything else) into OpenAI's error
// envelope. Nothing else in the server builds error bodies or picks statuses for engine errors.
import {
  EngineFailed,
  InvalidRequest,
  ModelFilesMissing,
  ModelNotFound,
  ModelUnavailable,
  QueueFull,
} from "../errors.ts";

/** OpenAI's error `type` values that clients branch on. */
export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error"
  | "service_unavailable";

export interface ApiErrorInit {
  status: number;
  message: string;
  type?: ErrorType;
  param?: string | null;
  code?: string | null;
  headers?: Record<string, string>;
}

/** The only error the server throws on purpose. Thrown, never returned. */
export class ApiError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly param: string | null;
  readonly code: string | null;
  readonly headers: Record<string, string>;

  constructor(init: ApiErrorInit) {
    super(init.message);
    this.name = "ApiError";
    this.status = init.status;
    this.type = init.type ?? defaultType(init.status);
    this.param = init.param ?? null;
    this.code = init.code ?? null;
    this.headers = init.headers ?? {};
  }

  static badRequest(message: string, param: string | null = null, code: string | null = null): ApiError {
    return new ApiError({ status: 400, message, param, code });
  }

  static notFound(message: string, code: string | null = null, param: string | null = null): ApiError {
    return new ApiError({ status: 404, message, code, param });
  }

  static modelNotFound(model: string): ApiError {
    return new ApiError({
      status: 404,
      message: `The model \`${model}\` does not exist or you do not have access to it.`,
      param: "model",
      code: "model_not_found",
    });
  }

  static overloaded(retryAfterSeconds: number, what = "The server"): ApiError {
    return new ApiError({
      status: 429,
      type: "rate_limit_error",
      message: `${what} is busy: its request queue is full. Retry after ${retryAfterSeconds} s.`,
      code: "rate_limit_exceeded",
      headers: { "retry-after": String(retryAfterSeconds) },
    });
  }
}

function defaultType(status: number): ErrorType {
  if (status === 401) return "authentication_error";
  if (status === 404) return "invalid_request_error";
  if (status === 429) return "rate_limit_error";
  if (status === 503) return "service_unavailable";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The envelope for an ApiError; used for HTTP bodies and for SSE error frames alike. */
export function errorBody(err: ApiError): ErrorBody {
  return { error: { message: err.message, type: err.type, param: err.param, code: err.code } };
}

/** Absolute file-system paths (two or more segments), as they appear in engine and loader messages. */
const ABSOLUTE_PATH = /(?<![\w.:/])\/(?:[\w.@+-]+\/)+([\w.@+-]+)/g;

/** A message with every absolute path cut to its last segment (`…/ggml-model.bin`): clients learn which file,
 * never where the server keeps it. */
export function redactPaths(message: string): string {
  return message.replace(ABSOLUTE_PATH, "…/$1");
}

/**
 * Turns anything thrown into an ApiError. Unknown errors become a 500 whose message never echoes the cause
 * (no stack traces or internals in responses); the caller logs the original.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof InvalidRequest) return ApiError.badRequest(err.message, err.param, err.code);
  if (err instanceof ModelNotFound) return ApiError.modelNotFound(err.model);
  if (err instanceof QueueFull) return ApiError.overloaded(err.retryAfterSeconds, err.what);
  if (err instanceof ModelUnavailable || err instanceof ModelFilesMissing) {
    const code = err instanceof ModelUnavailable ? err.code : "model_unavailable";
    const retry = err instanceof ModelUnavailable ? err.retryAfterSeconds : undefined;
    return new ApiError({
      status: 503,
      type: "service_unavailable",
      message: redactPaths(err.message),
      code,
      ...(retry !== undefined ? { headers: { "retry-after": String(retry) } } : {}),
    });
  }
  if (err instanceof EngineFailed) {
    return new ApiError({
      status: 503,
      type: "service_unavailable",
      message: `${redactPaths(err.message)} The model is loaded again on the next request; retry it.`,
      code: "engine_failed",
      headers: { "retry-after": "1" },
    });
  }
  if (err instanceof DOMException && err.name === "TimeoutError") {
    // The server's own per-request wall-clock limit (--request-timeout-ms) ran out.
    return new ApiError({
      status: 408,
      message: "The request took longer than the server's time limit for one request.",
      code: "request_timeout",
    });
  }
  if (err instanceof DOMException && err.name === "AbortError") {
    // Only reachable when the client went away; the status is never seen by anyone.
    return new ApiError({ status: 499, message: "Client closed request.", type: "invalid_request_error" });
  }
  return new ApiError({
    status: 500,
    type: "server_error",
    message: "The server had an error while processing your request.",
  });
}

/** A server-side error whose message tells the client which request id the server log has the details under. */
export function withRequestId(api: ApiError, requestId: string): ApiError {
  return new ApiError({
    status: api.status,
    type: api.type,
    param: api.param,
    code: api.code,
    headers: api.headers,
    message: `${api.message} (request id ${requestId}; the server log has the details)`,
  });
}

/** The HTTP response for anything thrown. */
export function errorResponse(err: unknown): Response {
  const api = toApiError(err);
  return new Response(JSON.stringify(errorBody(api)), {
    status: api.status,
    headers: { "content-type": "application/json", ...api.headers },
  });
}
