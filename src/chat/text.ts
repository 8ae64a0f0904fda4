// Owns turning generated token ids into streamable text: incremental detokenization that never emits half
// of a UTF-8 character, stop sequences that never leak (text that could still become a stop sequence is
// held back). Pure: works on any decode function.

/** Decodes ids to text, skipping special tokens. */
export type DecodeFn = (ids: number[]) => string;
/** A token's bytes as text (none for special tokens). */
export type BytesFn = (id: number) => ArrayLike<number>;

const REPLACEMENT = "\uFFFD";
/** A UTF-8 character spans at most 4 byte-tokens; past that a trailing U+FFFD is really in the text. */
const MAX_PENDING_TOKENS = 6;

/** Whether bytes end inside a UTF-8 character: a lead byte whose continuation bytes have not all come. */
export function endsMidCharacter(bytes: ArrayLike<number>): boolean {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const b = bytes[bytes.length - back];
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: its lead is further back
    const need = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 1;
    return need > back;
  }
  return false;
}

/**
 * Incremental detokenizer (the prefix/read-offset scheme): each new token is decoded together with a few
 * tokens before it, so decoders that treat the first token of a sequence specially (leading-space
 * stripping) and byte-level tokens that only form a character together both come out right. Text ending in
 * U+FFFD may be an incomplete character: with the tokens' bytes (`bytesOf`) the decoder knows, and a literal
 * U+FFFD (its three bytes all there) goes out at once, at the end of a reply too; a character cut off by the
 * end of the reply is left out. Without bytes, text ending in U+FFFD waits for the next token, and a trailing
 * one at the end is taken for a cut-off character.
 */
export class IncrementalDecoder {
  readonly #decode: DecodeFn;
  readonly #bytesOf: BytesFn | undefined;
  readonly #ids: number[];
  #prefix: number;
  #read: number;
  #prefixText: string;

  /** `context`: the last few prompt tokens, so the first generated token decodes as it would mid-text. */
  constructor(decode: DecodeFn, context: readonly number[] = [], bytesOf?: BytesFn) {
    this.#decode = decode;
    this.#bytesOf = bytesOf;
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
      (!text.endsWith(REPLACEMENT) || !this.#midCharacter() || pending >= MAX_PENDING_TOKENS)
    ) {
      const delta = text.slice(this.#prefixText.length);
      this.#prefix = this.#read;
      this.#read = this.#ids.length;
      this.#prefixText = this.#decode(this.#ids.slice(this.#prefix, this.#read));
      return delta;
    }
    return "";
  }

  /** Whether the tokens not yet emitted end inside a UTF-8 character (unknown without bytes: assumed so). */
  #midCharacter(): boolean {
    if (!this.#bytesOf) return true;
    const bytes: number[] = [];
    for (const id of this.#ids.slice(this.#read)) bytes.push(...Array.from(this.#bytesOf(id)));
    return endsMidCharacter(bytes);
  }

  /**
   * At the end of generation: whatever is still pending, except a character cut off by the end (its bytes
   * would decode as U+FFFD): a reply that stops mid-character ends before it.
   */
  flush(): string {
    if (this.#read === this.#ids.length) return "";
    const text = this.#decode(this.#ids.slice(this.#prefix));
    let delta = text.length > this.#prefixText.length ? text.slice(this.#prefixText.length) : "";
    if (this.#midCharacter()) { while (delta.endsWith(REPLACEMENT)) delta = delta.slice(0, -1); }
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
  /** The stop sequence that ended the text (the earliest in it; the first listed on a tie). */
  matched: string | null = null;

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
      if (i >= 0 && (cut < 0 || i < cut)) cut = i, this.matched = s;
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
