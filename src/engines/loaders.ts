// Owns which engine serves which task: the loaders built into this server, one per task.
import type { EngineLoader, Task } from "./types.ts";
import { loadEmbedding } from "./transformers/embedding.ts";
import { loadChat } from "./transformers/chat_engine.ts";

export function builtinLoaders(): Partial<Record<Task, EngineLoader>> {
  return {
    embedding: loadEmbedding,
    chat: loadChat,
  };
}
