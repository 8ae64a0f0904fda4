// Owns a chat engine whose compute runs on the calling thread: the pipeline over a backend loaded here. The
// server runs chat models in workers (src/workers/host.ts); this one is the in-process baseline of the
// benchmarks and the engine of tests that drive a backend directly.
import type { ChatBackend, ChatEngine, ChatEvent, ChatJob, ModelEntry } from "../engines/types.ts";
import type { Logger } from "../log.ts";
import { countPromptTokens, runChat } from "./pipeline.ts";

export class LocalChatEngine implements ChatEngine {
  readonly entry: ModelEntry;
  readonly backend: string;
  readonly contextLength: number;
  #running = 0;

  constructor(readonly model: ChatBackend, readonly log?: Logger) {
    this.entry = model.entry;
    this.backend = model.backend;
    this.contextLength = model.contextLength;
  }

  async *chat(job: ChatJob, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    this.#running++;
    try {
      yield* runChat(this.model, job, {
        ...(signal ? { signal } : {}),
        ...(this.log ? { log: this.log } : {}),
      });
    } finally {
      this.#running--;
    }
  }

  countTokens(job: ChatJob): Promise<number> {
    return Promise.resolve().then(() => countPromptTokens(this.model, job));
  }

  busy(): boolean {
    return this.#running > 0;
  }

  dispose(): Promise<void> {
    return this.model.dispose();
  }
}
