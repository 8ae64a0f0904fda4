// Placeholder for the audio endpoints while the whisper engine is being built; replaced by its owner.
import { ApiError } from "../http/errors.ts";

export function handleTranscriptions(): Response {
  throw ApiError.unavailable("This endpoint is not available in this build.", "not_implemented");
}

export function handleTranslations(): Response {
  throw ApiError.unavailable("This endpoint is not available in this build.", "not_implemented");
}
