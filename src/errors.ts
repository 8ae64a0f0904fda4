// Owns the errors that the layers below HTTP throw (engines, the chat pipeline, the registry and its queues).
// They carry what went wrong in native terms; the one mapper in src/http/errors.ts turns them into statuses
// and OpenAI's envelope. They also cross the worker boundary: `serializeError` flattens one into a plain
// object for postMessage and `reviveError` builds the same class again on the other side.

/** The request can't be served as asked (a 400): `param` names the field, `code` says why. */
export class InvalidRequest extends Error {
  override name = "InvalidRequest";
  constructor(message: string, readonly param: string | null = null, readonly code: string | null = null) {
    super(message);
  }
}

/** The chat template refused the conversation (e.g. a role the model doesn't support). */
export class ChatPromptError extends Error {
  override name = "ChatPromptError";
}

/** No model has this id or alias (a 404). */
export class ModelNotFound extends Error {
  override name = "ModelNotFound";
  constructor(readonly model: string) {
    super(`The model \`${model}\` does not exist or you do not have access to it.`);
  }
}

/** The model exists but can't serve now (a 503): its files are missing, it failed to load, or it is loading. */
export class ModelUnavailable extends Error {
  override name = "ModelUnavailable";
  constructor(message: string, readonly code = "model_unavailable", readonly retryAfterSeconds?: number) {
    super(message);
  }
}

/** Thrown by loaders when the model's files are not there; its message says what is missing and how to get it. */
export class ModelFilesMissing extends Error {
  override name = "ModelFilesMissing";
}

/** A bounded queue is full (a 429 with Retry-After). */
export class QueueFull extends Error {
  override name = "QueueFull";
  constructor(readonly retryAfterSeconds: number, readonly what: string) {
    super(`${what} is busy: its request queue is full. Retry after ${retryAfterSeconds} s.`);
  }
}

/**
 * The compute side of a loaded model failed (its worker crashed or was killed) while it held this request.
 * The model is dropped and loads again on its next use (a 503: retrying is the right thing to do).
 */
export class EngineFailed extends Error {
  override name = "EngineFailed";
}

const REVIVERS: Record<string, (e: SerializedError) => Error> = {
  InvalidRequest: (e) => new InvalidRequest(e.message, e.param ?? null, e.code ?? null),
  ModelNotFound: (e) => new ModelNotFound(e.model ?? ""),
  ModelUnavailable: (e) =>
    new ModelUnavailable(e.message, e.code ?? "model_unavailable", e.retryAfterSeconds ?? undefined),
  ModelFilesMissing: (e) => new ModelFilesMissing(e.message),
  QueueFull: (e) => new QueueFull(e.retryAfterSeconds ?? 1, e.what ?? "The model"),
  EngineFailed: (e) => new EngineFailed(e.message),
  ChatPromptError: (e) => new ChatPromptError(e.message),
};

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  param?: string | null;
  code?: string | null;
  model?: string;
  retryAfterSeconds?: number;
  what?: string;
}

/** A plain object for postMessage that `reviveError` turns back into the same error class. */
export function serializeError(err: unknown): SerializedError {
  if (err instanceof Error) {
    const out: SerializedError = { name: err.name, message: err.message };
    if (err.stack) out.stack = err.stack;
    for (const key of ["param", "code", "model", "retryAfterSeconds", "what"] as const) {
      const v = (err as unknown as Record<string, unknown>)[key];
      if (v !== undefined) (out as unknown as Record<string, unknown>)[key] = v;
    }
    return out;
  }
  return { name: "Error", message: String(err) };
}

/** The error a `serializeError` result stands for; unknown kinds come back as plain Errors (a 500). */
export function reviveError(e: SerializedError): Error {
  if (e.name === "AbortError" || e.name === "TimeoutError") return new DOMException(e.message, e.name);
  const revive = REVIVERS[e.name];
  const err = revive ? revive(e) : Object.assign(new Error(e.message), { name: e.name });
  if (e.stack) err.stack = e.stack;
  return err;
}
