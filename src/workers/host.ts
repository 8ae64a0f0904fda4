// Owns the HTTP thread's side of models that compute elsewhere (one runner process per loaded model, or a
// Worker with --isolation=thread; transport.ts): starting it and loading the model there, and engines
// (ChatEngine, EmbeddingEngine) whose calls are messages to it. A chat job's events arrive as the compute side
// posts them and are handed on at once; a consumer that stops (client gone) or an aborted signal cancels the
// job there. If the compute side dies (an abort, a segfault, killed, kill()), every request it held fails with
// EngineFailed naming the model and why, and the engine tells the registry (onFailure), which restarts it
// with backoff; the server itself keeps serving.
import { EngineFailed, reviveError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type {
  ChatEngine,
  ChatEvent,
  ChatJob,
  EmbeddingEngine,
  LoadContext,
  ModelEntry,
  PartialSegment,
  Placement,
  SpeechSpan,
  TranscribeOptions,
  Transcript,
  TranscriptionEngine,
} from "../engines/types.ts";
import type {
  ChatInfo,
  EmbeddingInfo,
  GuestMessage,
  HostMessage,
  LoadRequest,
  TranscriptionInfo,
  WorkerTask,
} from "./protocol.ts";
import { type Isolation, processTransport, threadTransport, type Transport } from "./transport.ts";
import { runnerCommand } from "./runner_command.ts";
import { DynamicBatcher } from "../engines/batcher.ts";
/** Texts one tokenize message carries at most (a request's own list may span several). */
const TOKENIZE_TEXTS = 4096;
/** How long dispose() waits for the worker to free its model before terminating it. */
const DISPOSE_WAIT_MS = 5_000;

interface Pending {
  /** A chat job's events, or a call's result. */
  onEvent?: (ev: ChatEvent) => void;
  /** A transcription's segments as they are decoded. */
  onSegment?: (segment: PartialSegment) => void;
  onResult?: (value: unknown) => void;
  onEnd: (err?: Error) => void;
}

/** One compute side (a runner process or a worker) and the requests in flight on it. */
class WorkerLink {
  #transport!: Transport;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #dead: Error | null = null;
  #onLoaded?: { resolve: (info: unknown) => void; reject: (e: Error) => void };
  #onDisposed?: () => void;
  readonly #failureListeners: ((reason: string) => void)[] = [];
  /** Set once dispose() began: the runner's exit after it is expected, not a failure to log. */
  #disposing = false;
  /** What the model holds, as the compute side last reported (after its load and after each request). */
  memoryBytes = 0;
  /** The runner's resident memory, as it last reported (processes only; 0 for a worker). */
  rssBytes = 0;

  constructor(readonly entry: ModelEntry, readonly log: Logger) {}

  /** Starts the compute side for `req`. */
  open(isolation: Isolation, req: LoadRequest): void {
    const events = {
      message: (m: GuestMessage) => this.#receive(m),
      died: (reason: string) => {
        if (!this.#disposing) {
          this.fail(new EngineFailed(`The model \`${this.entry.id}\` stopped: ${reason}.`));
        }
      },
    };
    this.#transport = isolation === "thread"
      ? threadTransport(`model ${this.entry.id}`, events)
      : processTransport(runnerCommand(req), events);
  }

  /** The runner's process id (undefined for a worker). */
  get pid(): number | undefined {
    return this.#transport.pid;
  }

  /** Runs `listener` once if the compute side dies on its own (not when unloaded). */
  onFailure(listener: (reason: string) => void): void {
    this.#failureListeners.push(listener);
  }

  get dead(): boolean {
    return this.#dead !== null;
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  load(req: LoadRequest): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#onLoaded = { resolve, reject };
      this.#send(req);
    });
  }

  /** Starts a request; its id is what `cancel` takes. */
  start(message: (id: number) => HostMessage, handlers: Pending): number {
    if (this.#dead) throw this.#dead;
    const id = this.#nextId++;
    this.#pending.set(id, handlers);
    this.#send(message(id));
    return id;
  }

  cancel(id: number): void {
    if (this.#pending.has(id) && !this.#dead) this.#send({ t: "cancel", id });
  }

  /** A request's result (tokenize, embed, transcribe). */
  call<T>(
    message: (id: number) => HostMessage,
    signal?: AbortSignal,
    onSegment?: (segment: PartialSegment) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let value: unknown;
      const onAbort = () => this.cancel(id);
      const id = this.start(message, {
        onSegment,
        onResult: (v) => value = v,
        onEnd: (err) => {
          signal?.removeEventListener("abort", onAbort);
          if (err) reject(signal?.aborted ? signal.reason : err);
          else resolve(value as T);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #send(m: HostMessage): void {
    this.#transport.post(m);
  }

  #receive(m: GuestMessage): void {
    switch (m.t) {
      case "loaded":
        this.memoryBytes = m.info.memoryBytes;
        this.#onLoaded?.resolve(m.info);
        this.#onLoaded = undefined;
        break;
      case "events":
        for (const { id, ev } of m.items) this.#pending.get(id)?.onEvent?.(ev);
        break;
      case "result":
        this.#pending.get(m.id)?.onResult?.(m.value);
        break;
      case "segment":
        this.#pending.get(m.id)?.onSegment?.(m.segment as PartialSegment);
        break;
      case "end":
      case "error": {
        const err = m.t === "error" ? reviveError(m.error) : undefined;
        if (m.t === "error" && m.id === null) {
          this.#onLoaded?.reject(err!);
          this.#onLoaded = undefined;
          break;
        }
        const p = this.#pending.get(m.id!);
        this.#pending.delete(m.id!);
        p?.onEnd(err);
        break;
      }
      case "memory":
        this.memoryBytes = m.bytes;
        if (m.rss) this.rssBytes = m.rss;
        break;
      case "log":
        this.log[m.level](m.msg, { model: this.entry.id, ...m.fields });
        break;
      case "disposed":
        this.#onDisposed?.();
        break;
    }
  }

  /** The worker is gone: every request it held fails with `err`; later calls fail at once. */
  fail(err: Error): void {
    if (this.#dead) return;
    this.#dead = err;
    this.log.error("model worker failed", { model: this.entry.id, error: err.message });
    this.#transport.terminate();
    for (const listener of this.#failureListeners) listener(err.message);
    this.#onLoaded?.reject(err);
    this.#onLoaded = undefined;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.onEnd(err);
    this.#onDisposed?.();
  }

  /** Ends the worker now, as a crash would (a stuck model, or a test of the failure path). */
  kill(reason = "it was stopped"): void {
    this.fail(new EngineFailed(`The model \`${this.entry.id}\` stopped computing: ${reason}.`));
  }

  /** Lets the worker free its model, then ends it (terminated if it does not answer in time). */
  async dispose(): Promise<void> {
    if (this.#dead) return;
    // From here on its end is ours, not a crash (a runner exits once it has freed its model).
    this.#failureListeners.length = 0;
    this.#disposing = true;
    const done = new Promise<void>((resolve) => this.#onDisposed = resolve);
    this.#send({ t: "dispose" });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([done, new Promise((r) => timer = setTimeout(r, DISPOSE_WAIT_MS))]);
    clearTimeout(timer);
    this.#dead ??= new EngineFailed(`The model \`${this.entry.id}\` was unloaded.`);
    this.#transport.terminate();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.onEnd(this.#dead);
  }
}

/**
 * A queue of one job's events between the worker's messages and the consumer's pulls. The worker never waits
 * for the consumer (it computes at full speed); a job's events are bounded by its token budget.
 */
class EventChannel {
  readonly #events: ChatEvent[] = [];
  #end: { err?: Error } | null = null;
  #wake: (() => void) | null = null;

  push(ev: ChatEvent): void {
    this.#events.push(ev);
    this.#wake?.();
  }

  close(err?: Error): void {
    this.#end = { err };
    this.#wake?.();
  }

  async *drain(): AsyncGenerator<ChatEvent> {
    let i = 0;
    while (true) {
      if (i < this.#events.length) {
        const ev = this.#events[i];
        // Drop what was handed on, so a long job's events don't pile up.
        if (++i > 256) {
          this.#events.splice(0, i);
          i = 0;
        }
        yield ev;
        continue;
      }
      if (this.#end) {
        if (this.#end.err) throw this.#end.err;
        return;
      }
      await new Promise<void>((r) => this.#wake = r);
      this.#wake = null;
    }
  }
}

/** What every engine of a worker shares: busy while requests are in flight, failed once the worker died. */
abstract class WorkerEngine {
  constructor(
    readonly entry: ModelEntry,
    readonly link: WorkerLink,
    readonly info: { placement?: Placement },
  ) {}

  busy(): boolean {
    return this.link.inFlight > 0;
  }

  failed(): boolean {
    return this.link.dead;
  }

  memoryBytes(): number {
    return this.link.memoryBytes;
  }

  placement(): Placement | undefined {
    return this.info.placement;
  }

  kill(reason?: string): void {
    this.link.kill(reason);
  }

  onFailure(listener: (reason: string) => void): void {
    this.link.onFailure(listener);
  }

  /** The runner's process id (undefined with --isolation=thread). */
  get pid(): number | undefined {
    return this.link.pid;
  }

  /** The runner's resident memory (0 with --isolation=thread). */
  rssBytes(): number {
    return this.link.rssBytes;
  }

  dispose(): Promise<void> {
    return this.link.dispose();
  }
}

/** A chat model computing in its own worker. */
export class WorkerChatEngine extends WorkerEngine implements ChatEngine {
  readonly backend: string;
  readonly contextLength: number;
  readonly parallel: number;

  constructor(entry: ModelEntry, link: WorkerLink, info: ChatInfo) {
    super(entry, link, info);
    this.backend = info.backend;
    this.contextLength = info.contextLength;
    this.parallel = info.parallel;
  }

  async *chat(job: ChatJob, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    if (signal?.aborted) throw signal.reason;
    const channel = new EventChannel();
    let ended = false;
    const id = this.link.start((id) => ({ t: "chat", id, job }), {
      onEvent: (ev) => channel.push(ev),
      onEnd: (err) => {
        ended = true;
        channel.close(err);
      },
    });
    const onAbort = () => this.link.cancel(id);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      yield* channel.drain();
    } catch (e) {
      // Cancelled here: the reason is this side's (a client gone, the request's time limit), not the worker's.
      if (signal?.aborted) throw signal.reason;
      throw e;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      // The consumer stopped early (its client went away): the worker stops within a token.
      if (!ended) this.link.cancel(id);
    }
  }

  countTokens(job: ChatJob, signal?: AbortSignal): Promise<number> {
    return this.link.call((id) => ({ t: "count", id, job }), signal);
  }
}

/** An embedding model computing in its own worker (tokenizing too). */
export class WorkerEmbeddingEngine extends WorkerEngine implements EmbeddingEngine {
  readonly backend: string;
  readonly dimensions: number;
  readonly maxTokens: number;
  readonly vocabSize: number;
  readonly normalized: boolean;

  constructor(entry: ModelEntry, link: WorkerLink, info: EmbeddingInfo) {
    super(entry, link, info);
    this.backend = info.backend;
    this.dimensions = info.dimensions;
    this.maxTokens = info.maxTokens;
    this.vocabSize = info.vocabSize;
    this.normalized = info.normalized;
  }

  /**
   * Tokenize calls made while one is in flight go to the runner together in the next (an embeddings burst
   * sent a message per request, each waking both processes on the cores the model computes on): the
   * embeddings batcher with no window (the first call goes at once), every text costing one, nothing refused.
   */
  readonly #tokenizer = new DynamicBatcher<string, number[]>({
    name: this.entry.id,
    windowMs: 0,
    budget: TOKENIZE_TEXTS,
    maxWaiting: Infinity,
    cost: () => 1,
    run: (texts) => this.link.call((id) => ({ t: "tokenize", id, texts })),
  });

  tokenize(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    return this.#tokenizer.submit(texts, signal);
  }

  embedBatch(inputs: readonly (readonly number[])[]): Promise<Float32Array[]> {
    return this.link.call((id) => ({ t: "embed", id, inputs: inputs as number[][] }));
  }
}

/** A whisper.cpp model computing in its own runner. */
export class WorkerTranscriptionEngine extends WorkerEngine implements TranscriptionEngine {
  readonly backend: string;
  readonly multilingual: boolean;
  readonly languages: ReadonlyMap<string, string>;

  constructor(entry: ModelEntry, link: WorkerLink, info: TranscriptionInfo) {
    super(entry, link, info);
    this.backend = info.backend;
    this.multilingual = info.multilingual;
    this.languages = new Map(info.languages);
  }

  transcribe(
    audio: Float32Array,
    opts: TranscribeOptions,
    signal?: AbortSignal,
    onSegment?: (segment: PartialSegment) => void,
  ): Promise<Transcript> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return this.link.call((id) => ({ t: "transcribe", id, audio, opts }), signal, onSegment);
  }

  detectSpeech(audio: Float32Array, vadModel: string, signal?: AbortSignal): Promise<SpeechSpan[]> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return this.link.call((id) => ({ t: "vad", id, audio, vadModel }), signal);
  }
}

/** Starts a runner (or worker) and loads the entry's model in it; a failed load ends it. */
async function startWorker(task: WorkerTask, entry: ModelEntry, ctx: LoadContext, opts: WorkerLoaderOptions) {
  const req: LoadRequest = {
    t: "load",
    task,
    entry,
    modelsDir: ctx.modelsDir,
    threads: ctx.threads,
    allowRemote: ctx.allowRemote,
    debug: opts.debug ?? false,
    parallel: ctx.parallel,
    llamaLib: ctx.llamaLib,
    gpuLayers: ctx.gpuLayers,
    hub: ctx.hub ? { endpoint: ctx.hub.endpoint, token: ctx.hub.token } : undefined,
    whisper: opts.whisper,
    // A worker thread shares the server's priority (only a runner process can lower its own).
    nice: opts.isolation === "thread" ? undefined : opts.nice,
    streamIntervalMs: opts.streamIntervalMs,
  };
  const link = new WorkerLink(entry, ctx.log);
  try {
    link.open(opts.isolation ?? "process", req);
    return { link, info: await link.load(req) };
  } catch (e) {
    await link.dispose().catch(() => {});
    throw e;
  }
}

export interface WorkerLoaderOptions {
  /** Forward the compute side's debug lines. */
  debug?: boolean;
  /** A runner process per model (default), or a worker thread of this process. */
  isolation?: Isolation;
  /** whisper.cpp's settings, for transcription runners. */
  whisper?: LoadRequest["whisper"];
  /** Runner processes' nice increment (see LoadRequest). */
  nice?: number;
  /** How often a chat model's tokens may leave its compute side (see LoadRequest). */
  streamIntervalMs?: number;
}

/** The loaders of models that compute elsewhere: each starts its own runner, served through a proxy engine. */
export function workerLoaders(opts: WorkerLoaderOptions = {}) {
  return {
    chat: async (entry: ModelEntry, ctx: LoadContext): Promise<WorkerChatEngine> => {
      const { link, info } = await startWorker("chat", entry, ctx, opts);
      return new WorkerChatEngine(entry, link, info as ChatInfo);
    },
    embedding: async (entry: ModelEntry, ctx: LoadContext): Promise<WorkerEmbeddingEngine> => {
      const { link, info } = await startWorker("embedding", entry, ctx, opts);
      return new WorkerEmbeddingEngine(entry, link, info as EmbeddingInfo);
    },
    transcription: async (entry: ModelEntry, ctx: LoadContext): Promise<WorkerTranscriptionEngine> => {
      const { link, info } = await startWorker("transcription", entry, ctx, opts);
      return new WorkerTranscriptionEngine(entry, link, info as TranscriptionInfo);
    },
  };
}
