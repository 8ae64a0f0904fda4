// Owns the names every layer uses for what a model does and which backend runs it. Imports nothing, so the
// hub (downloads), the engines and the CLI can all use them without depending on each other.

export const TASKS = ["chat", "embedding", "transcription"] as const;
export type Task = typeof TASKS[number];

/**
 * The backends that run models (each has its descriptor, src/engines/backends.ts, which a test checks against
 * this list); loaders are keyed by it (and the task).
 */
export const ENGINE_KINDS = ["transformers", "llama.cpp", "whisper.cpp"] as const;
export type EngineKind = typeof ENGINE_KINDS[number];
