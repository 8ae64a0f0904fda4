// Owns what voice activity detection does to the audio and back to the timestamps: the speech spans are cut out
// and joined with short silences (as whisper.cpp's own VAD path does), and times in the joined audio map back to
// the original, so segments and words are reported where they were actually spoken.
import type { SpeechSpan } from "../types.ts";

/** Silence put between two speech spans so the decoder still hears a pause. */
export const GAP_SECONDS = 0.1;

export interface Piece {
  /** Where the piece starts in the joined audio, seconds. */
  joined: number;
  /** Where it starts and ends in the original audio, seconds. */
  start: number;
  end: number;
}

export interface Joined {
  audio: Float32Array;
  pieces: Piece[];
}

/** Cuts the spans (clamped to the audio, sorted, overlaps merged) out of `audio` and joins them. */
export function joinSpeech(audio: Float32Array, spans: readonly SpeechSpan[], rate = 16_000): Joined {
  const total = audio.length / rate;
  const clean = spans
    .map((s) => ({ start: Math.max(0, s.start), end: Math.min(total, s.end) }))
    .filter((s) => s.end > s.start)
    .sort((a, b) => a.start - b.start);
  const merged: SpeechSpan[] = [];
  for (const s of clean) {
    const last = merged.at(-1);
    if (last && s.start <= last.end) last.end = Math.max(last.end, s.end);
    else merged.push({ ...s });
  }
  const gap = Math.round(GAP_SECONDS * rate);
  const ranges = merged.map((s) => [Math.round(s.start * rate), Math.round(s.end * rate)] as const);
  const length = ranges.reduce((n, [a, b]) => n + (b - a), 0) + gap * Math.max(0, ranges.length - 1);
  const out = new Float32Array(length);
  const pieces: Piece[] = [];
  let at = 0;
  ranges.forEach(([a, b], i) => {
    pieces.push({ joined: at / rate, start: a / rate, end: b / rate });
    out.set(audio.subarray(a, b), at);
    at += b - a + (i < ranges.length - 1 ? gap : 0);
  });
  return { audio: out, pieces };
}

/**
 * Maps a time in the joined audio to the original: inside a piece it shifts by the piece's offset; inside a
 * gap it snaps to the end of the speech before it (a segment ending there ended with that speech).
 */
export function toOriginal(t: number, pieces: readonly Piece[]): number {
  if (!pieces.length) return t;
  let p = pieces[0];
  for (const q of pieces) {
    if (q.joined <= t) p = q;
    else break;
  }
  const offset = t - p.joined;
  return Math.max(p.start, Math.min(p.end, p.start + offset));
}
