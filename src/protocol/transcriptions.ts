// Owns the wire side of POST /v1/audio/transcriptions and /v1/audio/translations: the multipart form (every
// field arrives as a string, so numbers and booleans are parsed here and a bad one is a 400 naming it), and
// the response formats OpenAI defines and the streaming events' shapes (rendering is api/transcript_format.ts).
// Model-dependent checks (is the language known to the model) happen in the API module.
import { z } from "zod";
import { ApiError } from "../http/errors.ts";
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
  // A stream is transcript.text.delta / .done events: it has no subtitle or verbose shape and no timestamps,
  // so asking for them with stream=true is refused rather than dropped.
  if (f.stream && f.response_format !== "json" && f.response_format !== "text") {
    ctx.addIssue({
      code: "custom",
      path: ["response_format"],
      message:
        `'${f.response_format}' cannot be streamed: a stream is transcript.text events; use 'json' or ` +
        "'text', or leave stream off.",
    });
  } else if (f.stream && f.timestamp_granularities !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["timestamp_granularities"],
      message:
        "timestamps cannot be streamed: a stream is transcript.text events; leave stream off and ask " +
        "for response_format 'verbose_json'.",
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

export interface TextDeltaEvent {
  type: "transcript.text.delta";
  delta: string;
}

export interface TextDoneEvent {
  type: "transcript.text.done";
  text: string;
  usage: DurationUsage;
}
