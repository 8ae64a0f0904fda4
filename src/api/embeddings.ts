// Placeholder for the embeddings endpoint while its engine is being built; replaced by the engine's owner.
import { ApiError } from "../http/errors.ts";

export function handleEmbeddings(): Response {
  throw ApiError.unavailable("This endpoint is not available in this build.", "not_implemented");
}
