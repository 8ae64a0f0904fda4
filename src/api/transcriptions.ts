// Owns POST /v1/audio/transcriptions and /v1/audio/translations: the multipart form -> checks that need the
// model (language) and the config (VAD) -> audio decoding -> the model's admission queue -> the whisper engine,
// answered in the requested response_format or streamed as transcript.text.delta / .done events.
import { decodeAudio } from "../audio/decode.ts";
import type { ModelEntry, PartialSegment, TranscribeOptions, TranscriptionEngine } from "../engines/types.ts";
import { readForm } from "../http/body.ts";
import { ApiError } from "../http/errors.ts";
import { sseResponse } from "../http/sse.ts";
import {
  type AudioRequest,
  type AudioTask,
  formToObject,
  parseAudioForm,
  type TextDeltaEvent,
  type TextDoneEvent,
} from "../protocol/transcriptions.ts";
import { formatResponse, usageOf } from "./transcript_format.ts";
import type { ApiContext } from "./context.ts";
import { type FieldPolicy, reportIgnored } from "./ignored.ts";

/** What the audio routes act on (src/api/ignored.ts); `chunking_strategy`, `include`, ... are reported. A
 * translation refuses `language`, `timestamp_granularities` and `stream` outright (protocol/transcriptions). */
export const AUDIO_FIELDS: FieldPolicy = {
  honoured: new Set([
    "file",
    "model",
    "prompt",
    "response_format",
    "temperature",
    "vad",
    "language",
    "timestamp_granularities",
    "stream",
  ]),
};

export function handleTranscriptions(req: Request, ctx: ApiContext): Promise<Response> {
  return handle(req, ctx, "transcribe");
}

export function handleTranslations(req: Request, ctx: ApiContext): Promise<Response> {
  return handle(req, ctx, "translate");
}

/** The VAD model a request uses, or undefined; a request asking for VAD the server cannot do is a 400. */
export function vadFor(
  request: AudioRequest,
  ctx: Pick<ApiContext, "config">,
): { model: string } | undefined {
  const wanted = request.vad ?? ctx.config.vad;
  if (!wanted) return undefined;
  if (!ctx.config.vadModel) {
    throw ApiError.badRequest(
      "Voice activity detection is not available: the server was started without --vad-model.",
      "vad",
      "unsupported_value",
    );
  }
  return { model: ctx.config.vadModel };
}

/** What the model can do: an English-only model neither translates nor takes another language. */
function checkAbilities(
  request: AudioRequest,
  task: AudioTask,
  model: string,
  engine: TranscriptionEngine,
): void {
  if (task === "translate" && !engine.multilingual) {
    throw ApiError.badRequest(
      `Model '${model}' is English-only and cannot translate: use a multilingual whisper model (whisper-base, ` +
        "whisper-1 by default).",
      "model",
      "unsupported_value",
    );
  }
  const lang = request.language;
  if (lang === undefined) return;
  if (!engine.multilingual && lang !== "en") {
    throw ApiError.badRequest(
      `Invalid 'language': model '${model}' is English-only, so the only language it takes is 'en'; use a ` +
        "multilingual whisper model for other languages.",
      "language",
      "unsupported_value",
    );
  }
  if (!engine.languages.has(lang)) {
    throw ApiError.badRequest(
      `Invalid 'language': '${lang}' is not an ISO-639-1 code this model knows.`,
      "language",
      "invalid_value",
    );
  }
}

async function handle(req: Request, ctx: ApiContext, task: AudioTask): Promise<Response> {
  const form = await readForm(req, ctx.audioLimits);
  const request = parseAudioForm(form, task);
  reportIgnored(req, ctx, formToObject(form), AUDIO_FIELDS);
  const entry = ctx.registry.resolve(request.model, "transcription");
  const vad = vadFor(request, ctx);
  const engine = await ctx.registry.engine<TranscriptionEngine>(entry, ctx.signal, ctx.defer);
  checkAbilities(request, task, request.model, engine);
  const bytes = new Uint8Array(await request.file.arrayBuffer());
  const audio = await decodeAudio(bytes, { signal: ctx.signal });
  const opts: TranscribeOptions = {
    language: request.language,
    translate: task === "translate",
    prompt: request.prompt,
    temperature: request.temperature,
    wordTimestamps: request.words,
    vad,
  };
  ctx.note({ model: entry.id, audioSeconds: +(audio.length / 16_000).toFixed(2) });
  if (request.stream) return await sseResponse(stoppable(ctx, entry, engine, audio, opts), { done: false });
  const permit = await ctx.registry.admission.queue(entry.id, ctx.config.transcriptionConcurrency).acquire(
    ctx.signal,
  );
  let transcript;
  try {
    transcript = await engine.transcribe(audio, opts, ctx.signal);
  } finally {
    permit.release();
  }
  // A translation's language is its output's, always English (as OpenAI reports it).
  const languageName = task === "translate"
    ? "english"
    : engine.languages.get(transcript.language) ?? transcript.language;
  return formatResponse(transcript, request.responseFormat, task, languageName);
}

type StreamEvent = TextDeltaEvent | TextDoneEvent;

/**
 * The stream's events, stoppable at any moment: an async generator only sees `return()` once its pending
 * `next()` settles (here: when the next segment is decoded, possibly a 30 s window later), so `return()` aborts
 * the transcription first, which settles that `next()` at once.
 */
function stoppable(
  ctx: ApiContext,
  entry: ModelEntry,
  engine: TranscriptionEngine,
  audio: Float32Array,
  opts: TranscribeOptions,
): AsyncIterableIterator<StreamEvent> {
  const stop = new AbortController();
  const gen = streamEvents(ctx, entry, engine, audio, opts, stop);
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => gen.next(),
    return: (value?: unknown) => {
      stop.abort(new DOMException("The client went away.", "AbortError"));
      return gen.return(value as undefined);
    },
  };
}

/** A text delta per decoded segment, then the full text. */
async function* streamEvents(
  ctx: ApiContext,
  entry: ModelEntry,
  engine: TranscriptionEngine,
  audio: Float32Array,
  opts: TranscribeOptions,
  stop: AbortController,
): AsyncGenerator<StreamEvent> {
  const signal = AbortSignal.any([ctx.signal, stop.signal]);
  const permit = await ctx.registry.admission.queue(entry.id, ctx.config.transcriptionConcurrency).acquire(
    signal,
  );
  const pending: PartialSegment[] = [];
  let wake: (() => void) | undefined;
  const onSegment = (s: PartialSegment) => {
    pending.push(s);
    wake?.();
  };
  let finished = false;
  const running = engine.transcribe(audio, opts, signal, onSegment).finally(() => {
    finished = true;
    wake?.();
  });
  running.catch(() => {}); // observed below; this only keeps an early return from leaving it unhandled
  let sent = "";
  try {
    while ((!finished || pending.length) && !stop.signal.aborted) {
      if (!pending.length) {
        await new Promise<void>((r) => wake = r);
        wake = undefined;
        continue;
      }
      const s = pending.shift()!;
      const delta = sent ? s.text : s.text.trimStart();
      if (!delta) continue;
      sent += delta;
      yield { type: "transcript.text.delta", delta };
    }
    if (stop.signal.aborted) return; // nobody is listening any more
    const transcript = await running;
    yield { type: "transcript.text.done", text: transcript.text, usage: usageOf(transcript) };
  } finally {
    stop.abort();
    await running.catch(() => {});
    permit.release();
  }
}
