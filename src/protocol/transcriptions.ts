// Owns the wire side of POST /v1/audio/transcriptions and /v1/audio/translations: the multipart form (every
// field arrives as a string, so numbers and booleans are parsed here and a bad one is a 400 naming it), and
// every response_format OpenAI defines (json, text, srt, vtt, verbose_json) plus the streaming events.
// Model-dependent checks (is the language known to the model) happen in the API module.
import { deflateSync } from "node:zlib";
import { z } from "zod";
import { ApiError } from "../http/errors.ts";
import type { Transcript } from "../engines/types.ts";
import { parseRequest } from "./validate.ts";

export const RESPONSE_FORMATS = ["json", "text", "srt", "verbose_json", "vtt"] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];
export type AudioTask = "transcribe" | "translate";

const TRUE = ["true", "1", "yes", "on"];
const FALSE = ["false", "0", "no", "off"];

/** A boolean form field: "true"/"false" (and 1/0, yes/no, on/off). */
const BoolField = z.string().transform((s, ctx) => {
  const v = s.trim().toLowerCase();
  if (TRUE.includes(v)) return true;
  if (FALSE.includes(v)) return false;
  ctx.addIssue({ code: "custom", message: `expected true or false, but got ${JSON.stringify(s)}.` });
  return z.NEVER;
});

const Temperature = z.string().transform((s, ctx) => {
  const n = s.trim() === "" ? NaN : Number(s);
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    ctx.addIssue({
      code: "custom",
      message: `expected a number between 0 and 1, but got ${JSON.stringify(s)}.`,
    });
    return z.NEVER;
  }
  return n;
});

/** The uploaded file. A plain string in its place is a client mistake worth naming. */
const FileField = z.custom<File>((v) => v instanceof Blob, { message: "expected a file upload." });

const Text = z.string();

const Common = {
  file: FileField,
  model: z.string().min(1),
  prompt: Text.optional(),
  response_format: z.enum(RESPONSE_FORMATS).default("json"),
  temperature: Temperature.default(0),
  /** Extension: skip silence with voice activity detection (default: the server's --vad). */
  vad: BoolField.optional(),
};

const TranscriptionForm = z.looseObject({
  ...Common,
  language: Text.regex(/^[a-z]{2,3}$/, "expected an ISO-639-1 code such as 'en'.").optional(),
  timestamp_granularities: z.array(z.enum(["segment", "word"])).optional(),
  stream: BoolField.default(false),
}).superRefine((f, ctx) => {
  if (f.timestamp_granularities?.includes("word") && f.response_format !== "verbose_json") {
    ctx.addIssue({
      code: "custom",
      path: ["timestamp_granularities"],
      message: "word timestamps need response_format 'verbose_json'.",
    });
  }
});

const TranslationForm = z.looseObject(Common);

export interface AudioRequest {
  file: File;
  model: string;
  prompt?: string;
  responseFormat: ResponseFormat;
  temperature: number;
  vad?: boolean;
  language?: string;
  words: boolean;
  stream: boolean;
}

/** Fields a translation does not take; sending one is a mistake worth a 400 rather than silence. */
const NOT_FOR_TRANSLATIONS = ["language", "timestamp_granularities", "stream"];

/**
 * FormData -> plain object: repeated fields and `name[]` fields become arrays under the bare name, so
 * `timestamp_granularities[]=word` and `timestamp_granularities=word` mean the same.
 */
export function formToObject(form: FormData): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [rawKey, value] of form.entries()) {
    const isList = rawKey.endsWith("[]");
    const key = isList ? rawKey.slice(0, -2) : rawKey;
    const prev = out[key];
    if (key === "timestamp_granularities" || isList) {
      out[key] = [...(Array.isArray(prev) ? prev : prev === undefined ? [] : [prev]), value];
    } else if (prev === undefined) out[key] = value;
    // A repeated scalar keeps its first value.
  }
  return out;
}

export function parseAudioForm(form: FormData, task: AudioTask): AudioRequest {
  const obj = formToObject(form);
  if (obj.file === undefined) {
    throw ApiError.badRequest("Missing required parameter: 'file'.", "file", "missing_required_parameter");
  }
  if (task === "translate") {
    const extra = NOT_FOR_TRANSLATIONS.find((k) => obj[k] !== undefined);
    if (extra) {
      throw ApiError.badRequest(`'${extra}' is not supported for translations.`, extra, "unknown_parameter");
    }
    const f = parseRequest(TranslationForm, obj);
    return { ...common(f), words: false, stream: false };
  }
  const f = parseRequest(TranscriptionForm, obj);
  return {
    ...common(f),
    language: f.language,
    words: f.timestamp_granularities?.includes("word") ?? false,
    stream: f.stream,
  };
}

function common(f: z.output<typeof TranslationForm>): Omit<AudioRequest, "words" | "stream"> {
  return {
    file: f.file as File,
    model: f.model,
    prompt: f.prompt || undefined,
    responseFormat: f.response_format,
    temperature: f.temperature,
    vad: f.vad,
  };
}

// ---------------------------------------------------------------- responses

export interface DurationUsage {
  type: "duration";
  seconds: number;
}

/** Billed like whisper-1: whole seconds of audio, rounded up. */
export function usageOf(t: Transcript): DurationUsage {
  return { type: "duration", seconds: Math.ceil(t.duration) };
}

/** `00:01:02,345` (srt) or `00:01:02.345` (vtt). */
export function clock(seconds: number, sep: "," | "."): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const h = Math.floor(ms / 3_600_000), m = Math.floor(ms / 60_000) % 60, s = Math.floor(ms / 1000) % 60;
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(h)}:${pad(m)}:${pad(s)}${sep}${pad(ms % 1000, 3)}`;
}

/** Cue text must not contain blank lines (they end a cue) nor `-->`. */
function cueText(text: string): string {
  return text.trim().replace(/\n\s*\n/g, "\n").replaceAll("-->", "->");
}

export function toSrt(t: Transcript): string {
  return t.segments
    .map((s, i) => `${i + 1}\n${clock(s.start, ",")} --> ${clock(s.end, ",")}\n${cueText(s.text)}\n`)
    .join("\n");
}

export function toVtt(t: Transcript): string {
  const cues = t.segments.map((s) => `${clock(s.start, ".")} --> ${clock(s.end, ".")}\n${cueText(s.text)}\n`);
  return ["WEBVTT\n", ...cues].join("\n");
}

/** gzip-style compression ratio of a text, as OpenAI's whisper reports it (repetitive text compresses well). */
export function compressionRatio(text: string): number {
  const bytes = new TextEncoder().encode(text);
  if (!bytes.length) return 0;
  return bytes.length / deflateSync(bytes).length;
}

/** whisper.cpp does not report where its 30 s window started; segments are placed in the window they start in. */
function seekOf(start: number): number {
  return Math.floor(start / 30) * 3000;
}

export function toVerboseJson(t: Transcript, task: AudioTask, languageName: string) {
  return {
    task,
    language: languageName,
    duration: t.duration,
    text: t.text,
    segments: t.segments.map((s, id) => ({
      id,
      seek: seekOf(s.start),
      start: s.start,
      end: s.end,
      text: s.text,
      tokens: s.tokens,
      temperature: s.temperature,
      avg_logprob: s.avgLogprob,
      compression_ratio: compressionRatio(s.text),
      no_speech_prob: s.noSpeechProb,
    })),
    ...(t.words ? { words: t.words.map((w) => ({ word: w.word, start: w.start, end: w.end })) } : {}),
    usage: usageOf(t),
  };
}

const TEXT = { "content-type": "text/plain; charset=utf-8" };

/** The HTTP response for a finished transcript in the requested format. */
export function formatResponse(
  t: Transcript,
  format: ResponseFormat,
  task: AudioTask,
  languageName: string,
): Response {
  switch (format) {
    case "json":
      return Response.json({ text: t.text, usage: usageOf(t) });
    case "text":
      return new Response(t.text + "\n", { headers: TEXT });
    case "srt":
      return new Response(toSrt(t), { headers: TEXT });
    case "vtt":
      return new Response(toVtt(t), { headers: TEXT });
    case "verbose_json":
      return Response.json(toVerboseJson(t, task, languageName));
  }
}

export interface TextDeltaEvent {
  type: "transcript.text.delta";
  delta: string;
}

export interface TextDoneEvent {
  type: "transcript.text.done";
  text: string;
  usage: DurationUsage;
}
