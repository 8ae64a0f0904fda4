// Owns reading request bodies safely: content-type checks (415), size limits enforced while streaming so an
// oversized body is refused before it is read whole (413), a receive deadline against slow clients (408), and
// JSON parse errors (400). Everything it throws is an ApiError.
import { ApiError } from "./errors.ts";

export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
}

function tooLarge(limit: number): ApiError {
  return new ApiError({
    status: 413,
    message: `Request body too large: the limit is ${limit} bytes.`,
    code: "request_too_large",
  });
}

/** Reads the whole body, refusing it as soon as it passes the limit or the deadline. */
export async function readLimited(req: Request, limits: BodyLimits): Promise<Uint8Array<ArrayBuffer>> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limits.maxBytes) throw tooLarge(limits.maxBytes);
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new ApiError({
            status: 408,
            message: `The request body was not received within ${limits.timeoutMs} ms.`,
            code: "request_timeout",
          }),
        ),
      limits.timeoutMs,
    );
  });
  try {
    while (true) {
      const { done, value } = await Promise.race([reader.read(), deadline]);
      if (done) break;
      total += value.byteLength;
      if (total > limits.maxBytes) throw tooLarge(limits.maxBytes);
      chunks.push(value);
    }
  } catch (e) {
    reader.cancel().catch(() => {});
    if (e instanceof ApiError) throw e;
    throw ApiError.badRequest("The request body could not be read completely.");
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

function mediaType(req: Request): string {
  return (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
}

/** Reads a JSON body. A missing content type is tolerated; another one is 415. */
export async function readJson(req: Request, limits: BodyLimits): Promise<unknown> {
  const type = mediaType(req);
  if (type && type !== "application/json" && !type.endsWith("+json")) {
    throw new ApiError({
      status: 415,
      message: `Unsupported content type '${type}': this endpoint expects 'application/json'.`,
      code: "unsupported_media_type",
    });
  }
  const bytes = await readLimited(req, limits);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidJson();
  }
  try {
    return JSON.parse(text);
  } catch {
    throw invalidJson();
  }
}

function invalidJson(): ApiError {
  return ApiError.badRequest(
    "We could not parse the JSON body of your request. The API expects a JSON payload, but what was sent " +
      "was not valid JSON.",
  );
}

/** Reads a multipart (or urlencoded) form within the limits. */
export async function readForm(req: Request, limits: BodyLimits): Promise<FormData> {
  const type = mediaType(req);
  if (type !== "multipart/form-data" && type !== "application/x-www-form-urlencoded") {
    throw new ApiError({
      status: 415,
      message: `Unsupported content type '${type || "(none)"}': this endpoint expects 'multipart/form-data'.`,
      code: "unsupported_media_type",
    });
  }
  const bytes = await readLimited(req, limits);
  try {
    return await new Response(bytes, { headers: { "content-type": req.headers.get("content-type")! } })
      .formData();
  } catch {
    throw ApiError.badRequest("The multipart form body could not be parsed.");
  }
}
