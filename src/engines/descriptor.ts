// Owns the shape of a backend descriptor: everything the rest of the server knows of a backend, exported by
// the backend's own folder (src/engines/<backend>/descriptor.ts) and listed once in backends.ts. The manifest
// (which engines exist, which files they claim, which options are theirs), the memory estimate before a load,
// `pull` and `list`, and the runner (how to load it, which libraries it may open) are driven from these.
import type { PullFormat } from "../hub/select.ts";
import type {
  ChatBackend,
  EngineKind,
  LoadContext,
  ModelEntry,
  Placement,
  Task,
  TranscriptionEngine,
} from "./types.ts";

/** What a runner passes a backend's load besides the common context (backend-specific settings). */
export interface RunnerLoadContext extends LoadContext {
  /** whisper.cpp: its library and transcriptions at once. */
  whisper?: { lib?: string; concurrency?: number };
}

/** An embedding model as a runner holds it (tokenizing on the runner too). */
export interface RunnerEmbedding {
  readonly backend: string;
  readonly dimensions: number;
  readonly maxTokens: number;
  readonly vocabSize: number;
  readonly normalized: boolean;
  tokenize(text: string): number[];
  embedBatch(inputs: readonly (readonly number[])[]): Promise<Float32Array[]>;
  memoryBytes(): number;
  placement?(): Placement | undefined;
  dispose(): Promise<void>;
}

/** A loaded model, as a runner serves it: chat through the pipeline, the others as engines. */
export type LoadedModel = ChatBackend | RunnerEmbedding | TranscriptionEngine;

/** How a model's files lie on disk: one file (a pattern finds it in a folder), or a folder of files. */
export type FileLayout = { kind: "file"; pattern: RegExp } | { kind: "folder" };

/** What a runner of this backend needs beyond the checkout and the models folder. */
export interface RunnerNeeds {
  /** Libraries it opens through FFI (files or folders). */
  ffi: string[];
  /** Other files it reads. */
  read?: string[];
}

export interface BackendDescriptor {
  readonly kind: EngineKind;
  /** The tasks it serves. */
  readonly tasks: readonly Task[];
  /** Whether it is the default backend of `task` for a model whose file (path or options.file) is `file`. */
  claims(task: Task, file: string | undefined): boolean;
  /** Manifest options only this backend acts on (elsewhere they are refused, never ignored). */
  readonly ownOptions: readonly string[];
  /** How its models lie on disk (for `list`). */
  readonly layout: FileLayout;
  /** The hub layout it reads (for `pull` and downloads on first use). */
  readonly pullFormat: PullFormat;
  /** The local files its load reads: what the memory budget counts before a load. Throws when unknown. */
  loadFiles(entry: ModelEntry): Promise<string[]>;
  /** What its runner may open and read (runner_command.ts turns this into permissions). */
  runnerNeeds(settings: { llamaLib?: string; whisperLib?: string; vadModel?: string }): RunnerNeeds;
  /** Loads a model for `task` (in a runner). */
  load(task: Task, entry: ModelEntry, ctx: RunnerLoadContext): Promise<LoadedModel>;
}
