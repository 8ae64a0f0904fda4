// Owns which engine serves which task: the loaders built into this server, one per task, with the parts of the
// configuration each engine needs beyond its load context.
import type { Config } from "../config.ts";
import type { EngineLoader, Task } from "./types.ts";
import { loadEmbedding } from "./transformers/embedding.ts";
import { loadChat } from "./transformers/chat_engine.ts";
import { whisperLoader } from "./whisper/mod.ts";

export function builtinLoaders(config: Config): Partial<Record<Task, EngineLoader>> {
  return {
    embedding: loadEmbedding,
    chat: loadChat,
    transcription: whisperLoader({
      lib: config.whisperLib || undefined,
      concurrency: config.transcriptionConcurrency,
    }),
  };
}
