// Owns word timing: whisper.cpp times tokens, clients want words. A token that starts with a space (or follows
// a timestamp) starts a new word; punctuation and word pieces join the word before them.
import type { TranscriptWord } from "../types.ts";

export interface TimedToken {
  text: string;
  start: number;
  end: number;
}

const PUNCTUATION_ONLY = /^[\p{P}\p{S}]+$/u;

/** Groups text tokens (specials already removed) into words with the first start and last end. */
export function tokensToWords(tokens: readonly TimedToken[]): TranscriptWord[] {
  const words: TranscriptWord[] = [];
  for (const t of tokens) {
    if (!t.text) continue;
    const last = words.at(-1);
    const startsWord = /^\s/.test(t.text) || !last;
    if (!startsWord || (last && PUNCTUATION_ONLY.test(t.text.trim()))) {
      last!.word += t.text;
      last!.end = Math.max(last!.end, t.end);
    } else {
      words.push({ word: t.text, start: t.start, end: Math.max(t.start, t.end) });
    }
  }
  return words
    .map((w) => ({ ...w, word: w.word.trim() }))
    .filter((w) => w.word.length > 0);
}
