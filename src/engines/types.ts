// Owns the contracts between the API layer and the engines. Engines see only these native types, never
// JSON or wire schemas; the API modules translate wire requests into them and results back out.
// Each engine's owner may extend its own section; keep wire names (snake_case) out of here.

export type Task = "chat" | "embedding" | "transcription";
export type DevicePref = "auto" | "webgpu" | "cpu";

/** One model of the manifest, already validated. `path` is resolved inside the models folder. */
export interface ModelEntry {
  /** Public id, as shown by /v1/models. */
  id: string;
  task: Task;
  /** Hugging Face repo id (e.g. "onnx-community/Qwen2.5-0.5B-Instruct") when the model comes from the hub. */
  repo?: string;
  /** Absolute local folder or file of the model (always inside the models folder). */
  path: string;
  /** Weight type the engine should load (e.g. "q4", "q8", "fp32", "q4f16"); engine-specific. */
  dtype?: string;
  device: DevicePref;
  /** Extra engine options from the manifest (file name of a ggml model, pooling override, ...). */
  options: Record<string, unknown>;
  /** Unix seconds the entry is reported as created. */
  created: number;
  ownedBy: string;
}

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** What every loader receives besides its entry. */
export interface LoadContext {
  modelsDir: string;
  threads: number;
  /** Whether missing files may be downloaded from the hub. */
  allowRemote: boolean;
  log: Logger;
}

export interface Engine {
  readonly entry: ModelEntry;
  /** Human-readable description of where it runs (e.g. "webgpu (llvmpipe) q4f16", "cpu fp32"). */
  readonly backend: string;
  dispose(): Promise<void>;
}

// ---------------------------------------------------------------- chat

export interface ChatToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments. */
  arguments: string;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  name?: string;
  toolCalls?: ChatToolCall[];
  toolCallId?: string;
}

export interface ChatTool {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

export interface ChatEngine extends Engine {
  /** Context window in tokens. */
  readonly contextLength: number;
}

// ---------------------------------------------------------------- embeddings

/** One input: a text, or pre-tokenized ids. */
export type EmbeddingInput = string | number[];

export interface EmbeddingEngine extends Engine {
  readonly dimensions: number;
  /** Longest input in tokens the model accepts. */
  readonly maxTokens: number;
  /** Token ids must lie in [0, vocabSize). */
  readonly vocabSize: number;
  /** Whether vectors come out L2-normalized (the model's own pipeline says so). */
  readonly normalized: boolean;
  /** The token ids the model sees for a text, special tokens included. */
  tokenize(text: string): number[];
  /**
   * Embeds already tokenized inputs (each as the model sees it) in one model call: one pooled vector per input,
   * in order. Inputs must be non-empty, at most maxTokens long, with ids below vocabSize.
   */
  embedBatch(inputs: readonly (readonly number[])[]): Promise<Float32Array[]>;
}

// ---------------------------------------------------------------- transcription

export interface TranscriptionEngine extends Engine {
  readonly multilingual: boolean;
}

export type AnyEngine = ChatEngine | EmbeddingEngine | TranscriptionEngine;

/** Loads one engine for an entry of its task. Throws on failure (the registry maps that to 503). */
export type EngineLoader = (entry: ModelEntry, ctx: LoadContext) => Promise<AnyEngine>;
