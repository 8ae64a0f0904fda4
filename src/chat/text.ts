// Owns turning generated token ids into streamable text: incremental detokenization that never emits half
// of a UTF-8 character, stop sequences that never leak (text that could still become a stop sequence is
// held back), and each token's exact bytes for logprobs. Pure: works on any decode function.

/** Decodes ids to text, skipping special tokens. */
export type DecodeFn = (ids: number[]) => string;

const REPLACEMENT = "\uFFFD";
/** A UTF-8 character spans at most 4 byte-tokens; past that a trailing U+FFFD is really in the text. */
const MAX_PENDING_TOKENS = 6;

/**
 * Incremental detokenizer (the prefix/read-offset scheme): each new token is decoded together with a few
 * tokens before it, so decoders that treat the first token of a sequence specially (leading-space
 * stripping) and byte-level tokens that only form a character together both come out right. Text ending in
 * U+FFFD is an incomplete character: it waits for the next token.
 */
export class IncrementalDecoder {
  readonly #decode: DecodeFn;
  readonly #ids: number[];
  #prefix: number;
  #read: number;
  #prefixText: string;

  /** `context`: the last few prompt tokens, so the first generated token decodes as it would mid-text. */
  constructor(decode: DecodeFn, context: readonly number[] = []) {
    this.#decode = decode;
    this.#ids = context.slice(-4);
    this.#prefix = 0;
    this.#read = this.#ids.length;
    this.#prefixText = this.#ids.length ? decode(this.#ids) : "";
  }

  /** Adds one token; returns the text it completes ("" while a character is still incomplete). */
  push(id: number): string {
    this.#ids.push(id);
    const text = this.#decode(this.#ids.slice(this.#prefix));
    const pending = this.#ids.length - this.#read;
    if (
      text.length > this.#prefixText.length &&
      (!text.endsWith(REPLACEMENT) || pending >= MAX_PENDING_TOKENS)
    ) {
      const delta = text.slice(this.#prefixText.length);
      this.#prefix = this.#read;
      this.#read = this.#ids.length;
      this.#prefixText = this.#decode(this.#ids.slice(this.#prefix, this.#read));
      return delta;
    }
    return "";
  }

  /**
   * At the end of generation: whatever is still pending, except a character cut off by the end (its bytes
   * would decode as U+FFFD): a reply that stops mid-character ends before it.
   */
  flush(): string {
    if (this.#read === this.#ids.length) return "";
    const text = this.#decode(this.#ids.slice(this.#prefix));
    let delta = text.length > this.#prefixText.length ? text.slice(this.#prefixText.length) : "";
    while (delta.endsWith(REPLACEMENT)) delta = delta.slice(0, -1);
    this.#prefix = this.#read = this.#ids.length;
    this.#prefixText = "";
    return delta;
  }
}

/**
 * Stop sequences over streamed text. `push` returns the text that is safe to emit: everything before the
 * first stop sequence, minus any tail that is still the beginning of one (held until the next push or
 * `end`). After a stop sequence is found, `stopped` is true and nothing more is returned.
 */
export class StopFilter {
  readonly #stops: string[];
  #held = "";
  stopped = false;

  constructor(stops: readonly string[]) {
    this.#stops = stops.filter((s) => s.length > 0);
  }

  push(text: string): string {
    if (this.stopped) return "";
    if (this.#stops.length === 0) return text;
    const buf = this.#held + text;
    let cut = -1;
    for (const s of this.#stops) {
      const i = buf.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      this.stopped = true;
      this.#held = "";
      return buf.slice(0, cut);
    }
    let hold = 0;
    for (const s of this.#stops) {
      for (let k = Math.min(s.length - 1, buf.length); k > hold; k--) {
        if (buf.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    this.#held = hold ? buf.slice(buf.length - hold) : "";
    return hold ? buf.slice(0, buf.length - hold) : buf;
  }

  /** Generation ended without a stop sequence: the held tail was text after all. */
  end(): string {
    const out = this.stopped ? "" : this.#held;
    this.#held = "";
    return out;
  }
}

/** GPT-2's byte-level alphabet: byte b is written as this code point in byte-level BPE vocabularies. */
function byteLevelDecoder(): Map<string, number> {
  const bytes: number[] = [];
  for (let b = 33; b <= 126; b++) bytes.push(b);
  for (let b = 161; b <= 172; b++) bytes.push(b);
  for (let b = 174; b <= 255; b++) bytes.push(b);
  const chars = bytes.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + n++);
    }
  }
  const map = new Map<string, number>();
  bytes.forEach((b, i) => map.set(String.fromCodePoint(chars[i]), b));
  return map;
}

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Each token's own bytes and display text for logprobs (OpenAI's `token` and `bytes`). Byte-level vocabularies
 * map through GPT-2's alphabet, byte-fallback tokens (`<0xE2>`) are one byte, anything else is the UTF-8 of
 * its decoded text. A token that is not valid UTF-8 by itself shows as `bytes:\xe2\x80`, like OpenAI's.
 */
export class TokenTexts {
  readonly #cache = new Map<number, { text: string; bytes: number[] }>();
  readonly #byteLevel: Map<string, number> | null;

  constructor(
    private readonly idToToken: (id: number) => string | undefined,
    private readonly decodeOne: (id: number) => string,
    byteLevel: boolean,
    private readonly specialIds: ReadonlySet<number> = new Set(),
  ) {
    this.#byteLevel = byteLevel ? byteLevelDecoder() : null;
  }

  get(id: number): { text: string; bytes: number[] } {
    let hit = this.#cache.get(id);
    if (!hit) {
      const bytes = this.#bytes(id);
      let text: string;
      try {
        text = strictDecoder.decode(new Uint8Array(bytes));
      } catch {
        text = "bytes:" + bytes.map((b) => "\\x" + b.toString(16).padStart(2, "0")).join("");
      }
      hit = { text, bytes };
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
        const b = this.#byteLevel.get(ch);
        if (b === undefined) return [...encoder.encode(this.decodeOne(id))];
        out.push(b);
      }
      return out;
    }
    return [...encoder.encode(token.replaceAll("\u2581", " "))];
  }
}
