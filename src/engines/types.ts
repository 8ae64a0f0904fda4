// Owns the contracts between the API layer and the engines. Engines see only these native types, never
// JSON or wire schemas; the API modules translate wire requests into them and results back out.
// Each engine's owner may extend its own section; keep wire names (snake_case) out of here.

import type { HubOptions } from "../hub/client.ts";
import type { Logger } from "../log.ts";

import type { EngineKind, Task } from "../model_kinds.ts";

export type { EngineKind, Task };
export type DevicePref = "auto" | "webgpu" | "cpu";

/** One model of the manifest, already validated. `path` is resolved inside the models folder. */
export interface ModelEntry {
  /** Public id, as shown by /v1/models. */
  id: string;
  task: Task;
  engine: EngineKind;
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

/** What every loader receives besides its entry. */
export interface LoadContext {
  modelsDir: string;
  threads: number;
  /** Whether missing files may be downloaded from the hub. */
  allowRemote: boolean;
  /** Hub endpoint and token for those downloads (default: HF_ENDPOINT / HF_TOKEN from the environment). */
  hub?: HubOptions;
  /** Sequences a chat backend that batches them decodes together (llama.cpp). */
  parallel?: number;
  /** Where libllama_shim is (default: this checkout's native/build/llama/lib). */
  llamaLib?: string;
  /** Layers of a GGUF model on the GPU (-1: all that fit); a manifest entry's options.gpu_layers wins. */
  gpuLayers?: number;
  log: Logger;
  /**
   * Runs just before the model's thread blocks on work much longer than a decode step (a round that reads
   * prompt tokens): the compute side sends what it holds first (a stream's held token, see
   * workers/outbox.ts), since nothing else runs on that thread until the round ends.
   */
  beforeLongWork?: () => void;
}

/** Where a loaded model runs, and what it holds on a GPU (llama.cpp reports it; other engines need not). */
export interface Placement {
  /** "CPU", or the GPU(s) ggml used: "Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits))", "CUDA0 (NVIDIA H100 80GB HBM3)". */
  device: string;
  /** Layers in GPU memory, of `layers` (llama.cpp counts the output layer as one). */
  gpuLayers: number;
  layers: number;
  /** Bytes in GPU memory: weights, KV cache, compute buffers (the rest is in memoryBytes). */
  gpuBytes: number;
}

export interface Engine {
  readonly entry: ModelEntry;
  /** Human-readable description of where it runs (e.g. "webgpu (llvmpipe) q4f16", "cpu fp32"). */
  readonly backend: string;
  /** True while work is in flight outside the model's queue (e.g. a batcher); the registry never unloads a busy engine. */
  busy?(): boolean;
  /** True once the engine can serve no more (its worker died); the registry then loads the model again. */
  failed?(): boolean;
  /** Runs `listener` once, with the reason, if its compute side (a runner process) dies on its own. */
  onFailure?(listener: (reason: string) => void): void;
  /** Resident memory of the process it computes in, when that is its own (a runner). */
  rssBytes?(): number;
  /**
   * Bytes the loaded model holds now: its weights as loaded plus its caches and states (KV caches, compute
   * buffers). The memory budget counts this; absent, the registry's estimate from the files stands.
   */
  memoryBytes?(): number;
  /** Where it runs and its GPU memory (absent: host memory and the CPU, or a runtime that does not say). */
  placement?(): Placement | undefined;
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

/** A tool whose call may be forced; `param` names where the request declared its parameters (for 400s). */
export interface ChatToolDecl {
  tool: ChatTool;
  param: string;
}

/** What a request's tool fields mean for one generation (see api/chat_tools.ts for the wire side). */
export interface ChatToolPlan {
  /** Every tool the request declared, whatever the choice (strict ones must compile all the same). */
  declared: ChatToolDecl[];
  /** Tools rendered into the prompt (undefined: none). */
  offered: ChatTool[] | undefined;
  /** Read tool calls out of the output. */
  parse: boolean;
  /** Calls kept from the output (0: tool_choice none, markup dropped). */
  maxCalls: number;
  /** Tools a forced call may name (tool_choice required or a named function), else null. */
  forced: { tools: ChatToolDecl[]; parallel: boolean } | null;
  /** Where the tools were declared ("tools" or "functions"), for errors that name no single tool. */
  param: string;
}

/** The shape the reply must take (response_format): any JSON object, or a document of a JSON Schema. */
export type ChatResponseFormat =
  | { type: "json_object" }
  | {
    type: "json_schema";
    name: string;
    schema: Record<string, unknown>;
    strict: boolean;
    /** Where the request gave the schema, for its 400s (default: chat's response_format.json_schema.schema). */
    param?: string;
  };

/** How the next token is picked; unset fields take the model's generation_config defaults. */
export interface ChatSamplingRequest {
  temperature?: number;
  topP?: number;
  topK?: number;
  presencePenalty: number;
  frequencyPenalty: number;
  /** Token id -> value added to its logit. */
  logitBias: Record<string, number>;
}

/**
 * One chat generation in native terms: plain data (it crosses the worker boundary by structured clone).
 * The pipeline (src/chat/pipeline.ts) turns it into a prompt, a budget, constraints and parsers.
 */
export interface ChatJob {
  /** The conversation, rendered through the chat template (ignored when `prompt` is set). */
  messages: ChatMessage[];
  /** A raw prompt (legacy completions): no chat template; text is tokenized as the model's tokenizer does. */
  prompt?: ChatRawPrompt;
  /** Report the prompt's text and, with `logprobs`, each prompt token's logprob (the `prompt` event). */
  echo?: boolean;
  /** Thinking models: false asks the template not to think (enable_thinking), where it supports that. */
  thinking?: boolean;
  /** How hard a reasoning model should think (low, medium, high): the template's `reasoning_effort`. */
  reasoningEffort?: string;
  /** Most tokens a thinking block may take; then the block is closed (where its close tag is one token). */
  thinkingBudget?: number;
  tools: ChatToolPlan;
  responseFormat: ChatResponseFormat | null;
  /** Choices, generated one after another from one prefill. */
  n: number;
  /** Most tokens per choice; null: whatever the context window leaves. */
  maxTokens: number | null;
  /**
   * maxTokens is a ceiling: a prompt that leaves less room gets what is left instead of a 400 (Anthropic's
   * clients ask for the model's whole output limit, e.g. Claude Code's 128000, whatever the prompt).
   */
  maxTokensFit?: boolean;
  /** End-of-sequence tokens are suppressed until a choice has this many tokens. */
  minTokens: number;
  /** Never stop at end-of-sequence tokens (benchmarks: exactly maxTokens). */
  ignoreEos: boolean;
  /** Stop sequences (never part of the output). */
  stop: string[];
  sampling: ChatSamplingRequest;
  /** Choice i draws from the PRNG stream (seed, i). */
  seed: bigint;
  /** The client marked the prompt for caching (Anthropic's cache_control): a hint for the prompt cache. */
  keepCache?: boolean;
  /** null: no logprobs; otherwise how many alternatives per token (0..20). */
  logprobs: number | null;
}

/**
 * A prompt given without a chat template: text (with `suffix`, a fill-in-the-middle prompt, for models whose
 * vocabulary has FIM tokens) or token ids as they are.
 */
export type ChatRawPrompt = { text: string; suffix?: string } | { ids: number[] };

/** How the next token is picked once the defaults are applied; see src/chat/sampler.ts. */
export interface ChatSampling {
  /** 0 = greedy (argmax); otherwise logits are divided by it. */
  temperature: number;
  /** Nucleus mass in (0, 1]; 1 = off. */
  topP: number;
  /** Keep only the k most likely tokens; 0 = off. */
  topK: number;
  /** OpenAI: subtracted once from every token already generated. */
  presencePenalty: number;
  /** OpenAI: subtracted per occurrence of a token already generated. */
  frequencyPenalty: number;
  /** Token id -> value added to its logit (-100 bans, +100 all but forces). */
  logitBias: ReadonlyMap<number, number>;
}

/**
 * Plug-in point for constrained decoding (one instance per choice): sees each row of logits after bias and
 * penalties, before sampling, and may mask tokens (set them to -Infinity); then learns the token chosen.
 * process() returns "end" when it left only end-of-sequence tokens (the constrained output is complete): the
 * pipeline then ends the choice even under min_tokens or ignore_eos, which would otherwise mask every token.
 */
export interface ChatLogitsProcessor {
  process(logits: Float32Array): "end" | void;
  accept(tokenId: number): void;
}

export interface ChatToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  /** A fragment of the arguments' JSON text. */
  arguments?: string;
}

/** What one step adds to a choice's message. */
export interface ChatDelta {
  content?: string;
  /** Text of a thinking block (`<think>...</think>`), never part of content. */
  reasoning?: string;
  toolCalls?: ChatToolCallDelta[];
}

export type ChatFinishReason = "stop" | "length" | "tool_calls";

/**
 * Plug-in point for parsing the output (tool calls; one instance per choice): receives the visible text
 * (stop sequences already handled) and turns it into deltas. Without one, text is content.
 */
export interface ChatOutputParser {
  push(text: string): ChatDelta[];
  end(): ChatDelta[];
  /** Read after `end()`: overrides the finish reason (e.g. "tool_calls"). */
  finishReason?: ChatFinishReason;
}

export interface ChatTokenAlternative {
  token: string;
  bytes: number[];
  logprob: number;
}

export interface ChatTokenLogprob extends ChatTokenAlternative {
  top: ChatTokenAlternative[];
}

export type ChatEvent =
  /** First, once the prompt is rendered and accepted: its size and how much of it came from a cache. */
  | {
    type: "prompt";
    promptTokens: number;
    cachedTokens: number;
    /** The temperature and nucleus mass sampling uses: the request's, or the model's defaults where it set none. */
    sampling?: { temperature: number; topP: number };
    /** Job fields the model had no way to act on (`reasoningEffort` with a template that has no such switch). */
    unused?: string[];
    /** With `echo`: the prompt's text, and with `logprobs` each prompt token's text and logprob (null first). */
    echo?: { text: string; tokens: string[]; logprobs: (ChatTokenLogprob | null)[] | null };
  }
  /** Prefill is done for this choice; deltas follow. */
  | { type: "start"; choice: number }
  /** `tokens`: tokens generated so far in this choice (so an aborted request still knows its count). */
  | { type: "delta"; choice: number; delta: ChatDelta; logprobs: ChatTokenLogprob[] | null; tokens: number }
  | {
    type: "finish";
    choice: number;
    reason: ChatFinishReason;
    completionTokens: number;
    /** Of completionTokens, those spent in a thinking block. */
    reasoningTokens: number;
    /** The stop sequence that ended the choice (reason "stop"), when one did. */
    stopSequence?: string;
  };

/** A loaded chat model as the API sees it: wherever its compute runs (a worker, or this thread). */
export interface ChatEngine extends Engine {
  /** Context window in tokens. */
  readonly contextLength: number;
  /** Jobs it runs at once (its queue's concurrency); 1 when absent. */
  readonly parallel?: number;
  /**
   * Runs one job: the `prompt` event first (errors before it are the request's: InvalidRequest and such),
   * then each choice's events. `signal` stops it within a token.
   */
  chat(job: ChatJob, signal?: AbortSignal): AsyncIterable<ChatEvent>;
  /** The job's prompt size in tokens, rendered as `chat` would render it, without generating. */
  countTokens(job: ChatJob, signal?: AbortSignal): Promise<number>;
}

/** The chat template's switches a job may set. */
export interface RenderOptions {
  thinking?: boolean;
  reasoningEffort?: string;
}

/** A sequence of one backend: its own KV state, continued by prefill and step. */
export type SequenceId = number;

/**
 * A native twin of the pipeline's sampler (src/chat/sampler.ts): at temperature 0 argmax() exactly (no
 * draw), else the token drawn from `logits` with top-k / top-p, advancing the Rng's four state words in `rng`
 * by one draw as the JavaScript one does (the same token but where its weights' last bits decide). -1: it
 * could not (the JavaScript path runs instead).
 */
export type SampleKernel = (
  logits: Float32Array,
  temperature: number,
  topK: number,
  topP: number,
  rng: Uint32Array,
) => number;

/** What a run ahead draws with (ChatBackend.runAhead). */
export interface RunAheadOptions {
  sampling: ChatSampling;
  /** The choice's Rng state (Rng.state): set, as each token is taken, to the state after its draw. */
  rng: Uint32Array;
  /** Draws at most (the choice's token budget left). */
  limit: number;
  /** The first this many draws have the end-of-sequence tokens masked (min_tokens, ignore_eos). */
  masked: number;
  /** A drawn end-of-sequence token ends the run (false under ignore_eos). */
  stopOnEos: boolean;
}

/**
 * Tokens a backend draws and feeds on its own for one sequence (ChatBackend.runAhead). Each token taken is
 * one the pipeline then treats as drawn by itself; what it did not take is as if never drawn once it ends.
 */
export interface RunAhead {
  /**
   * The next token drawn; null once the run is over (other work came, or a decode failed) and every token it
   * drew is taken: the sequence goes on with `step(seq, lastToken)`.
   */
  next(): Promise<number | null>;
  /**
   * Ends the run when the choice needs no more tokens, after taking `taken` of them: the sequence then holds
   * what it would had the pipeline drawn those itself (the last one taken not fed).
   */
  end(taken: number): Promise<void>;
}

/**
 * What the chat pipeline needs of a model, whatever runs it (transformers.js, llama.cpp): rendering and
 * tokenizing, token texts, and logits for sequences it holds. Logits returned belong to the caller until the
 * next call on that sequence (the pipeline may mask them in place).
 */
export interface ChatBackend {
  readonly entry: ModelEntry;
  readonly backend: string;
  readonly contextLength: number;
  /** Token ids are below this (the width of the logits). */
  readonly vocabSize: number;
  /** End-of-sequence token ids (generation_config, config and tokenizer together). */
  readonly eosIds: ReadonlySet<number>;
  /** The tokenizer's tokenizer.json (constrained decoding builds its vocabulary index from it). */
  readonly tokenizerJson: unknown;
  /** Each token's bytes (null: never text), for backends without a tokenizer.json; preferred when present. */
  tokenBytes?(): readonly (Uint8Array | null)[];
  /** Jobs it decodes together (its model's queue admits this many); one at a time when absent. */
  readonly parallel?: number;
  /** The chat template's text (e.g. to detect the model's tool-call format). */
  readonly chatTemplate: string | null;
  /** Sampling defaults from the model's generation_config (used where a request sets none). */
  readonly defaults: { temperature: number; topP: number; topK: number };
  /**
   * Renders a conversation through the chat template and tokenizes it; throws ChatPromptError (src/errors.ts)
   * when refused. `thinking` false is passed to the template as `enable_thinking`, `reasoningEffort` as
   * `reasoning_effort` (gpt-oss's templates write it into the system turn).
   */
  render(messages: ChatMessage[], tools?: ChatTool[], opts?: RenderOptions): number[];
  /**
   * Tokenizes text without a template: special-token text is read as those tokens, and `addSpecial` adds
   * what the tokenizer adds around a text (a BOS token for Llama-style models).
   */
  encode(text: string, addSpecial: boolean): number[];
  /** The id of a token spelled exactly `piece` (added tokens such as `<think>` or `<|fim_prefix|>`). */
  tokenId(piece: string): number | undefined;
  /** Text of ids (special tokens skipped), as the tokenizer decodes them. */
  decode(ids: number[]): string;
  /** A token's own text and bytes (partial UTF-8 shows as bytes), for logprobs. */
  tokenText(id: number): { text: string; bytes: number[] };
  /**
   * A new, empty sequence. `keep`: the request asked for its prompt to stay cached (a hint; backends with a
   * prompt cache keep such a sequence's state ahead of unmarked ones once it closes).
   */
  open(opts?: { keep?: boolean }): SequenceId;
  /** A copy of a sequence's state (n choices from one prefill). */
  fork(seq: SequenceId): SequenceId;
  /** Frees a sequence's state. */
  close(seq: SequenceId): void;
  /**
   * Feeds ids after what the sequence holds (reusing a cached prefix where the backend can) and returns the
   * last position's logits and how many of `ids` came from a cache. Logits (here and from `step`) are the
   * caller's to change in place until the sequence's next `prefill` or `step`, which may reuse the array.
   */
  prefill(seq: SequenceId, ids: number[]): Promise<{ logits: Float32Array; cachedTokens: number }>;
  /** Feeds one token and returns the next logits. */
  step(seq: SequenceId, token: number): Promise<Float32Array>;
  /**
   * Instead of `step(seq, token)` and sampling each row: the backend feeds `token`, then draws and feeds
   * tokens on its own (the sample kernel's draws, from `rng`), handing them over as they come, while nothing
   * else wants the model. Null when it cannot now (other work, or no such loop); the pipeline asks only for a
   * choice whose rows need nothing but the sampler.
   */
  runAhead?(seq: SequenceId, token: number, opts: RunAheadOptions): RunAhead | null;
  /**
   * Whether `step` may compute on this thread before it returns (a synchronous native call): then the
   * pipeline delivers a token's event before asking for the next step, since the event would otherwise wait
   * for that computation. Absent: steps compute off the thread and start as soon as a token is chosen.
   */
  readonly stepsBlock?: boolean;
  /** Draws tokens natively (the sampler's hot loop), when the backend has a native library at hand. */
  readonly sampleKernel?: SampleKernel;
  /** Bytes held now: weights plus KV caches (see Engine.memoryBytes). */
  memoryBytes?(): number;
  /** See Engine.placement. */
  placement?(): Placement | undefined;
  dispose(): Promise<void>;
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
  /** The token ids the model sees for each text, special tokens included. */
  tokenize(texts: string[], signal?: AbortSignal): Promise<number[][]>;
  /**
   * Embeds already tokenized inputs (each as the model sees it) in one model call: one pooled vector per input,
   * in order. Inputs must be non-empty, at most maxTokens long, with ids below vocabSize.
   */
  embedBatch(inputs: readonly (readonly number[])[]): Promise<Float32Array[]>;
}

// ---------------------------------------------------------------- transcription

/** Audio reaches transcription engines as mono float32 at this rate. */
export const TRANSCRIPTION_SAMPLE_RATE = 16_000;

export interface TranscribeOptions {
  /** ISO-639-1 code of the spoken language; undefined detects it (English-only models always use "en"). */
  language?: string;
  /** Output English whatever the spoken language (multilingual models only). */
  translate: boolean;
  /** Text that conditions the decoder (spelling, style, the previous part of a recording). */
  prompt?: string;
  /** Sampling temperature of the first attempt, 0..1; higher ones follow when decoding fails. */
  temperature: number;
  /** Also time each word. */
  wordTimestamps: boolean;
  /** Skip silence first with voice activity detection, using this Silero ggml model file. */
  vad?: { model: string };
}

export interface TranscriptSegment {
  /** Seconds from the start of the audio. */
  start: number;
  end: number;
  text: string;
  /** Token ids as decoded, timestamp tokens included. */
  tokens: number[];
  /** Mean log probability of the text tokens (timestamps and special tokens left out). */
  avgLogprob: number;
  noSpeechProb: number;
  /** The temperature of the decode whisper kept (the requested one, or a fallback's). */
  temperature: number;
  /** Start of the 30 s window the segment was decoded in, in 10 ms frames (OpenAI's `seek`). */
  seek: number;
}

export interface TranscriptWord {
  word: string;
  start: number;
  end: number;
}

export interface Transcript {
  /** ISO-639-1 code of the language transcribed. */
  language: string;
  /** Seconds of audio received (before any VAD). */
  duration: number;
  text: string;
  segments: TranscriptSegment[];
  /** Present when word timestamps were asked for. */
  words?: TranscriptWord[];
}

/** A segment as soon as it is decoded, for streaming. */
export interface PartialSegment {
  index: number;
  start: number;
  end: number;
  text: string;
}

/** A stretch of speech found by voice activity detection, in seconds. */
export interface SpeechSpan {
  start: number;
  end: number;
}

export interface TranscriptionEngine extends Engine {
  readonly multilingual: boolean;
  /** ISO-639-1 code -> English name in lower case ("en" -> "english"), as the model knows them. */
  readonly languages: ReadonlyMap<string, string>;
  /**
   * Transcribes (or translates) 16 kHz mono samples. Waits for a free slot of the engine's pool; `signal`
   * stops the work; `onSegment` sees each segment as it is decoded.
   */
  transcribe(
    audio: Float32Array,
    opts: TranscribeOptions,
    signal?: AbortSignal,
    onSegment?: (segment: PartialSegment) => void,
  ): Promise<Transcript>;
  /** Where speech is, by voice activity detection with the given Silero ggml model. */
  detectSpeech(audio: Float32Array, vadModel: string, signal?: AbortSignal): Promise<SpeechSpan[]>;
}

export type AnyEngine = ChatEngine | EmbeddingEngine | TranscriptionEngine;

/** Loads one engine for an entry of its task. Throws on failure (the registry maps that to 503). */
export type EngineLoader = (entry: ModelEntry, ctx: LoadContext) => Promise<AnyEngine>;
