// Owns the compute side of a loaded model, wherever it runs (a runner process, runner.ts, or a Worker,
// guest.ts): it loads the backend, runs chat jobs through the pipeline (src/chat/pipeline.ts) and embedding
// batches, and posts the events of each round of work together (outbox.ts), as soon as the round's tasks
// end. Cancels stop a job within a token. Errors go back serialized; log lines go back to the server's logger.
import { serializeError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { countPromptTokens, runChat } from "../chat/pipeline.ts";
import type { ChatBackend, TranscriptionEngine } from "../engines/types.ts";
import type { RunnerEmbedding } from "../engines/descriptor.ts";
import { backendOf } from "../engines/backends.ts";
import { EventOutbox } from "./outbox.ts";
import type {
  ChatInfo,
  EmbeddingInfo,
  GuestMessage,
  HostMessage,
  LoadRequest,
  TranscriptionInfo,
} from "./protocol.ts";

/** How the compute side talks to the server: a Worker's postMessage, or frames on a runner's pipes. */
export interface GuestPort {
  postMessage(m: GuestMessage, transfer?: Transferable[]): void;
  /** Runs once the model is freed after a dispose (a runner exits). */
  onDisposed?(): void;
}

let scope: GuestPort;

/** Chat events on their way to the server (outbox.ts); the interval is the load's. */
const outbox = new EventOutbox((items) => scope.postMessage({ t: "events", items }), 0);
const post = (m: GuestMessage, transfer?: Transferable[]) => {
  outbox.flush();
  scope.postMessage(m, transfer);
};

function workerLog(debug: boolean): Logger {
  const send =
    (level: "debug" | "info" | "warn" | "error") => (msg: string, fields?: Record<string, unknown>) =>
      post({ t: "log", level, msg, ...(fields ? { fields } : {}) });
  return {
    debug: debug ? send("debug") : () => {},
    info: send("info"),
    warn: send("warn"),
    error: send("error"),
  };
}

let chat: ChatBackend | null = null;
let embedding: RunnerEmbedding | null = null;
let transcription: TranscriptionEngine | null = null;
let log: Logger = workerLog(false);
const jobs = new Map<number, AbortController>();

async function load(req: LoadRequest): Promise<void> {
  log = workerLog(req.debug);
  outbox.intervalMs = req.streamIntervalMs ?? 0;
  const ctx = {
    modelsDir: req.modelsDir,
    threads: req.threads,
    allowRemote: req.allowRemote,
    log,
    parallel: req.parallel,
    llamaLib: req.llamaLib,
    gpuLayers: req.gpuLayers,
    hub: req.hub,
    whisper: req.whisper,
    // A held token goes before a round that reads a prompt, not after it.
    beforeLongWork: () => outbox.flush(),
  };
  try {
    // The backend's own descriptor loads it: a new backend needs no change here.
    const model = await backendOf(req.entry.engine).load(req.task, req.entry, ctx);
    if (req.task === "transcription") {
      const e = model as TranscriptionEngine;
      transcription = e;
      const info: TranscriptionInfo = {
        backend: e.backend,
        multilingual: e.multilingual,
        languages: [...e.languages],
        memoryBytes: e.memoryBytes?.() ?? 0,
        placement: e.placement?.(),
      };
      post({ t: "loaded", info });
      post({ t: "memory", bytes: info.memoryBytes, rss: processRss() });
    } else if (req.task === "chat") {
      const backend = model as ChatBackend;
      chat = backend;
      const info: ChatInfo = {
        backend: backend.backend,
        contextLength: backend.contextLength,
        parallel: backend.parallel ?? 1,
        memoryBytes: backend.memoryBytes?.() ?? 0,
        placement: backend.placement?.(),
      };
      post({ t: "loaded", info });
      post({ t: "memory", bytes: info.memoryBytes, rss: processRss() });
    } else {
      const e = model as RunnerEmbedding;
      embedding = e;
      const info: EmbeddingInfo = {
        backend: e.backend,
        dimensions: e.dimensions,
        maxTokens: e.maxTokens,
        vocabSize: e.vocabSize,
        normalized: e.normalized,
        memoryBytes: e.memoryBytes(),
        placement: e.placement?.(),
      };
      post({ t: "loaded", info });
      post({ t: "memory", bytes: info.memoryBytes, rss: processRss() });
    }
  } catch (e) {
    post({ t: "error", id: null, error: serializeError(e) });
  }
}

/** This process's resident memory, reported by a runner (a worker shares the server's: 0, not reported). */
function processRss(): number {
  return isRunner ? Deno.memoryUsage().rss : 0;
}
let isRunner = false;

async function runJob(id: number, run: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const ac = new AbortController();
  jobs.set(id, ac);
  let error: unknown;
  try {
    await run(ac.signal);
  } catch (e) {
    error = e;
  }
  jobs.delete(id);
  outbox.end(id);
  // Before the end: the host answers the request on it, and by then knows what the model holds after it.
  const bytes = chat?.memoryBytes?.() ?? embedding?.memoryBytes() ?? transcription?.memoryBytes?.();
  if (bytes !== undefined) post({ t: "memory", bytes, rss: processRss() });
  post(error === undefined ? { t: "end", id } : { t: "error", id, error: serializeError(error) });
}

/** Serves one model through `port`; returns the handler of the server's messages. */
export function serveModel(port: GuestPort, runner = false): (m: HostMessage) => void {
  scope = port;
  isRunner = runner;
  return receive;
}

function receive(m: HostMessage): void {
  switch (m.t) {
    case "load":
      void load(m);
      break;
    case "chat":
      void runJob(m.id, async (signal) => {
        for await (const ev of runChat(chat!, m.job, { signal, log })) outbox.emit(m.id, ev);
      });
      break;
    case "count":
      void runJob(m.id, () => {
        post({ t: "result", id: m.id, value: countPromptTokens(chat!, m.job) });
        return Promise.resolve();
      });
      break;
    case "cancel":
      jobs.get(m.id)?.abort(new DOMException("The generation was cancelled.", "AbortError"));
      break;
    case "tokenize":
      void runJob(m.id, () => {
        const e = embedding!;
        post({ t: "result", id: m.id, value: m.texts.map((t) => e.tokenize(t)) });
        return Promise.resolve();
      });
      break;
    case "embed":
      void runJob(m.id, async () => {
        const vectors = await embedding!.embedBatch(m.inputs);
        post({ t: "result", id: m.id, value: vectors }, [
          ...new Set(vectors.map((v) => v.buffer as ArrayBuffer)),
        ]);
      });
      break;
    case "transcribe":
      void runJob(m.id, async (signal) => {
        const t = await transcription!.transcribe(
          m.audio,
          m.opts,
          signal,
          (segment) => post({ t: "segment", id: m.id, segment }),
        );
        post({ t: "result", id: m.id, value: t });
      });
      break;
    case "vad":
      void runJob(m.id, async (signal) => {
        post({
          t: "result",
          id: m.id,
          value: await transcription!.detectSpeech(m.audio, m.vadModel, signal),
        });
      });
      break;
    case "dispose":
      void (async () => {
        for (const ac of jobs.values()) ac.abort(new DOMException("The model is unloading.", "AbortError"));
        await chat?.dispose().catch(() => {});
        await embedding?.dispose().catch(() => {});
        await transcription?.dispose().catch(() => {});
        post({ t: "disposed" });
        scope.onDisposed?.();
      })();
      break;
  }
}
