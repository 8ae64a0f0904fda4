// Owns the byte-level BPE tokenizer of the generated decoder models: GPT-2 byte<->unicode mapping, the Qwen2
// pre-tokenizer regex, a small deterministic BPE trainer (so prompts tokenize into words), a reference encoder
// (used by generators to know which token ids a reply is made of) and the tokenizer.json / tokenizer_config
// writer in the Hugging Face `tokenizers` format.
import { join } from "node:path";

/** GPT-2's reversible byte -> printable-unicode-char table (index = byte value). */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const bs: number[] = [];
  for (let i = 33; i <= 126; i++) bs.push(i);
  for (let i = 161; i <= 172; i++) bs.push(i);
  for (let i = 174; i <= 255; i++) bs.push(i);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) bs.push(b), cs.push(256 + n++);
  }
  const table: string[] = new Array(256);
  bs.forEach((b, i) => (table[b] = String.fromCodePoint(cs[i])));
  return table;
})();

/** The 256 byte tokens in GPT-2 vocabulary order (printable bytes first), which is also Qwen2's order. */
export const BYTE_TOKENS: readonly string[] = (() => {
  const order: number[] = [];
  for (let i = 33; i <= 126; i++) order.push(i);
  for (let i = 161; i <= 172; i++) order.push(i);
  for (let i = 174; i <= 255; i++) order.push(i);
  for (let b = 0; b < 256; b++) if (!order.includes(b)) order.push(b);
  return order.map((b) => BYTE_TO_UNICODE[b]);
})();

/** Qwen2's split regex, as it appears in tokenizer.json (Rust `regex` syntax). */
export const QWEN2_SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/** The same pattern for JavaScript (case-insensitive group spelled out). */
const SPLIT_JS =
  /(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** Text -> pre-tokenized chunks, each already in byte-level unicode form. */
export function preTokenize(text: string): string[] {
  const enc = new TextEncoder();
  return (text.normalize("NFC").match(SPLIT_JS) ?? []).map((c) =>
    [...enc.encode(c)].map((b) => BYTE_TO_UNICODE[b]).join("")
  );
}

/** Byte-level token string -> the UTF-8 bytes it stands for. */
export function tokenBytes(token: string): Uint8Array {
  return Uint8Array.from([...token], (ch) => BYTE_TO_UNICODE.indexOf(ch));
}

/** Byte-level form of a text piece without pre-tokenization (for hand-picked generation-only tokens). */
export function byteLevel(text: string): string {
  return [...new TextEncoder().encode(text)].map((b) => BYTE_TO_UNICODE[b]).join("");
}

export type Merge = [string, string];

/**
 * Classic BPE training over weighted chunks: repeatedly merge the most frequent adjacent pair (ties broken by
 * the pair's string so the result never depends on Map iteration subtleties).
 */
export function trainBpe(chunkCounts: Map<string, number>, numMerges: number): Merge[] {
  const words = [...chunkCounts].map(([chunk, count]) => ({ symbols: [...chunk], count }));
  const merges: Merge[] = [];
  for (let m = 0; m < numMerges; m++) {
    const pairs = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.symbols.length; i++) {
        const key = w.symbols[i] + "\u0000" + w.symbols[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + w.count);
      }
    }
    let best = "";
    let bestCount = 0;
    for (const [key, count] of pairs) {
      if (count > bestCount || (count === bestCount && key < best)) best = key, bestCount = count;
    }
    if (bestCount < 2) break;
    const [a, b] = best.split("\u0000");
    merges.push([a, b]);
    for (const w of words) w.symbols = applyMerge(w.symbols, a, b);
  }
  return merges;
}

function applyMerge(symbols: string[], a: string, b: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (i + 1 < symbols.length && symbols[i] === a && symbols[i + 1] === b) out.push(a + b), i++;
    else out.push(symbols[i]);
  }
  return out;
}

/** Reference BPE encoder (no added tokens): what the generators use to find a text's natural tokens. */
export class ByteLevelBpe {
  private readonly ranks = new Map<string, number>();

  constructor(merges: Merge[]) {
    merges.forEach(([a, b], i) => this.ranks.set(a + "\u0000" + b, i));
  }

  encodeChunk(chunk: string): string[] {
    let symbols = [...chunk];
    for (;;) {
      let bestRank = Infinity;
      let best: Merge | null = null;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const r = this.ranks.get(symbols[i] + "\u0000" + symbols[i + 1]);
        if (r !== undefined && r < bestRank) bestRank = r, best = [symbols[i], symbols[i + 1]];
      }
      if (!best) return symbols;
      symbols = applyMerge(symbols, best[0], best[1]);
    }
  }

  encode(text: string): string[] {
    return preTokenize(text).flatMap((c) => this.encodeChunk(c));
  }
}

export interface AddedToken {
  content: string;
  special: boolean;
}

export interface ByteLevelTokenizerSpec {
  /** The BPE model's vocabulary in id order (byte tokens, merge results, extras). */
  vocab: string[];
  merges: Merge[];
  /** Added tokens: `atStart` = they are vocab[0..n) (SmolLM2 style), otherwise they get the ids right after
   * `vocab` and stay out of the BPE model (Qwen2 style). */
  added: AddedToken[];
  addedAtStart?: boolean;
  /** tokenizer_config.json fields beyond the added-token table. */
  config: Record<string, unknown>;
}

/** Writes tokenizer.json + tokenizer_config.json in Qwen2's layout; returns token -> id for every token. */
export async function writeByteLevelTokenizer(
  dir: string,
  spec: ByteLevelTokenizerSpec,
): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  spec.vocab.forEach((t, i) => {
    if (ids.has(t)) throw new Error(`duplicate vocab entry ${JSON.stringify(t)}`);
    ids.set(t, i);
  });
  const added = spec.added.map((t, i) => {
    const id = spec.addedAtStart ? i : spec.vocab.length + i;
    if (spec.addedAtStart && spec.vocab[i] !== t.content) {
      throw new Error(`added token ${t.content} is not vocab[${i}]`);
    }
    ids.set(t.content, id);
    return {
      id,
      content: t.content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: t.special,
    };
  });
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: "NFC" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: QWEN2_SPLIT_REGEX }, behavior: "Isolated", invert: false },
        byteLevel,
      ],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(spec.vocab.map((t, i) => [t, i])),
      merges: spec.merges.map(([a, b]) => `${a} ${b}`),
    },
  };
  const config = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(added.map((t) => [String(t.id), { ...t, id: undefined }])),
    ...spec.config,
  };
  await Deno.writeTextFile(join(dir, "tokenizer.json"), JSON.stringify(tokenizer, null, 2) + "\n");
  await Deno.writeTextFile(join(dir, "tokenizer_config.json"), JSON.stringify(config, null, 2) + "\n");
  // vocab.json + merges.txt: the "slow" tokenizer files some loaders (and llama.cpp converters) look for.
  await Deno.writeTextFile(
    join(dir, "vocab.json"),
    JSON.stringify(Object.fromEntries(spec.vocab.map((t, i) => [t, i]))) + "\n",
  );
  await Deno.writeTextFile(
    join(dir, "merges.txt"),
    "#version: 0.2\n" + spec.merges.map(([a, b]) => `${a} ${b}`).join("\n") + "\n",
  );
  return ids;
}
