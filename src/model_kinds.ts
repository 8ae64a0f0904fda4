// Owns the names every layer uses for what a model does and which backend runs it. Imports nothing, so the
// hub (downloads), the engines and the CLI can all use them without depending on each other.

export type Task = "chat" | "embedding" | "transcription";

/** The backend that runs a model; loaders are keyed by it (and the task). */
export type EngineKind = "transformers" | "llama.cpp" | "whisper.cpp";
