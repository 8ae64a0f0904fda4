// Owns how a finished transcript is written back: json (text and usage), text, SRT and WebVTT cues, and
// verbose_json (segments with whisper's per-segment figures, words), each as its HTTP response. The wire
// shapes' schemas stay in src/protocol/transcriptions.ts; this is rendering, from the engine's Transcript.
import { deflateSync } from "node:zlib";
import type { Transcript } from "../engines/types.ts";
import type { AudioTask, DurationUsage, ResponseFormat } from "../protocol/transcriptions.ts";

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

export function toVerboseJson(t: Transcript, task: AudioTask, languageName: string) {
  return {
    task,
    language: languageName,
    duration: t.duration,
    text: t.text,
    segments: t.segments.map((s, id) => ({
      id,
      seek: s.seek,
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
