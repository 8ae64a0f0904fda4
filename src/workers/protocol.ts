// Owns the messages between the HTTP thread (host.ts) and a model's compute side (serve_model.ts, in a runner
// process or a worker). Everything here is plain data for structured clone (postMessage, or node:v8's
// serialize in frames.ts): jobs and events are the native types of engines/types.ts, errors travel as
// SerializedError and come back as the same classes (src/errors.ts).
import type { SerializedError } from "../errors.ts";
import type { ChatEvent, ChatJob, ModelEntry, Placement, TranscribeOptions } from "../engines/types.ts";

/** What a worker is loaded to serve. */
export type WorkerTask = "chat" | "embedding" | "transcription";

export interface LoadRequest {
  t: "load";
  task: WorkerTask;
  entry: ModelEntry;
  modelsDir: string;
  threads: number;
  allowRemote: boolean;
  debug: boolean;
  parallel?: number;
  llamaLib?: string;
  gpuLayers?: number;
  hub?: { endpoint?: string; token?: string };
  /** whisper.cpp: its library and transcriptions at once; the VAD model a runner may read. */
  whisper?: { lib?: string; concurrency?: number; vadModel?: string };
  /**
   * A runner process lowers its CPU priority by this much (nice) before it loads anything, so every thread
   * the model's libraries start inherits it (--runner-nice; not for a worker thread).
   */
  nice?: number;
  /** Chat tokens leave the compute side no more often than this (outbox.ts; 0 or absent: every round's). */
  streamIntervalMs?: number;
}

/** How a runner is told its nice increment on its command line (runner.ts applies it). */
export const NICE_ARG = "--nice=";

export type HostMessage =
  | LoadRequest
  | { t: "chat"; id: number; job: ChatJob }
  | { t: "count"; id: number; job: ChatJob }
  | { t: "cancel"; id: number }
  | { t: "tokenize"; id: number; texts: string[] }
  | { t: "embed"; id: number; inputs: number[][] }
  | { t: "transcribe"; id: number; audio: Float32Array; opts: TranscribeOptions }
  | { t: "vad"; id: number; audio: Float32Array; vadModel: string }
  | { t: "dispose" };

/** What the host learns of a loaded chat model. */
export interface ChatInfo {
  backend: string;
  contextLength: number;
  /** Jobs the backend runs at once (sequences decoded together). */
  parallel: number;
  /** Bytes the model holds once loaded (see Engine.memoryBytes). */
  memoryBytes: number;
  placement?: Placement;
}

/** What the host learns of a loaded embedding model. */
export interface EmbeddingInfo {
  backend: string;
  dimensions: number;
  maxTokens: number;
  vocabSize: number;
  normalized: boolean;
  memoryBytes: number;
  placement?: Placement;
}

/** What the host learns of a loaded transcription model. */
export interface TranscriptionInfo {
  backend: string;
  multilingual: boolean;
  languages: [string, string][];
  memoryBytes: number;
  placement?: Placement;
}

export type GuestMessage =
  | { t: "loaded"; info: ChatInfo | EmbeddingInfo | TranscriptionInfo }
  /** Chat events of one or more jobs, in order: what the worker produced since its last message. */
  | { t: "events"; items: { id: number; ev: ChatEvent }[] }
  /** A transcription's segment as it is decoded (PartialSegment). */
  | { t: "segment"; id: number; segment: unknown }
  | { t: "result"; id: number; value: unknown }
  | { t: "end"; id: number }
  /** What the model holds now, sent after each request (a chat job's KV cache stays as the prompt cache). */
  | { t: "memory"; bytes: number; rss?: number }
  | { t: "error"; id: number | null; error: SerializedError }
  | { t: "log"; level: "debug" | "info" | "warn" | "error"; msg: string; fields?: Record<string, unknown> }
  | { t: "disposed" };
