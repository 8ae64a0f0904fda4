// Owns each token's own bytes and display text for logprobs (OpenAI's `token` and `bytes`), from a
// transformers.js tokenizer's vocabulary: what the chat backend answers to the pipeline's tokenText().
import { tokenDisplayText, UNICODE_TO_BYTE } from "../byte_level.ts";

const encoder = new TextEncoder();

/**
 * Each token's own bytes and display text for logprobs (OpenAI's `token` and `bytes`). Byte-level vocabularies
 * map through GPT-2's alphabet, byte-fallback tokens (`<0xE2>`) are one byte, anything else is the UTF-8 of
 * its decoded text. A token that is not valid UTF-8 by itself shows as `bytes:\xe2\x80`, like OpenAI's.
 */
export class TokenTexts {
  readonly #cache = new Map<number, { text: string; bytes: number[] }>();
  readonly #byteLevel: boolean;

  constructor(
    private readonly idToToken: (id: number) => string | undefined,
    private readonly decodeOne: (id: number) => string,
    byteLevel: boolean,
    private readonly specialIds: ReadonlySet<number> = new Set(),
  ) {
    this.#byteLevel = byteLevel;
  }

  get(id: number): { text: string; bytes: number[] } {
    let hit = this.#cache.get(id);
    if (!hit) {
      const bytes = this.#bytes(id);
      hit = { text: tokenDisplayText(bytes), bytes };
      if (this.#cache.size < 200_000) this.#cache.set(id, hit);
    }
    return hit;
  }

  #bytes(id: number): number[] {
    const token = this.idToToken(id);
    if (token === undefined) return [...encoder.encode(this.decodeOne(id))];
    if (this.specialIds.has(id)) return [...encoder.encode(token)];
    const fallback = /^<0x([0-9A-Fa-f]{2})>$/.exec(token);
    if (fallback) return [parseInt(fallback[1], 16)];
    if (this.#byteLevel) {
      const out: number[] = [];
      for (const ch of token) {
        const b = UNICODE_TO_BYTE.get(ch.codePointAt(0)!);
        if (b === undefined) return [...encoder.encode(this.decodeOne(id))];
        out.push(b);
      }
      return out;
    }
    return [...encoder.encode(token.replaceAll("\u2581", " "))];
  }
}
