// Owns the mapping from a Hugging Face tokenizer.json to each token id's bytes, which is what the vocabulary
// index needs. Byte-level BPE (GPT-2, Qwen, SmolLM, Llama 3) stores tokens as strings of the "bytes to
// unicode" alphabet (Ġ = space, Ċ = newline); SentencePiece-style vocabularies (Llama 2, Mistral) use ▁ for
// space and <0xNN> byte-fallback pieces. Added tokens marked special (<|im_end|>, <|endoftext|>) get null:
// they are never text, so the grammar never offers them; non-special added tokens (Qwen's <tool_call>)
// are their text. With transformers.js: `tokenBytesFromTokenizerJson(tokenizer._tokenizerJSON)`.

export interface TokenizerJsonLike {
  model?: { type?: string; vocab?: unknown };
  decoder?: unknown;
  added_tokens?: { id: number; content: string; special?: boolean }[];
}

import { UNICODE_TO_BYTE } from "../../engines/byte_level.ts";

const encoder = new TextEncoder();

function decoderTypes(d: unknown, out: Set<string> = new Set()): Set<string> {
  if (d && typeof d === "object") {
    const x = d as { type?: unknown; decoders?: unknown[] };
    if (typeof x.type === "string") out.add(x.type);
    if (Array.isArray(x.decoders)) { for (const s of x.decoders) decoderTypes(s, out); }
  }
  return out;
}

/** Bytes of one byte-level BPE token string; null when a character is outside the alphabet. */
export function byteLevelBytes(token: string): Uint8Array | null {
  const out = new Uint8Array(token.length);
  let i = 0;
  for (const ch of token) {
    const b = UNICODE_TO_BYTE.get(ch.codePointAt(0)!);
    if (b === undefined) return null;
    out[i++] = b;
  }
  return out.subarray(0, i);
}

/** Bytes of one SentencePiece token string (▁ is a space, <0xNN> a raw byte). */
export function sentencePieceBytes(token: string): Uint8Array {
  const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(token);
  if (m) return new Uint8Array([parseInt(m[1], 16)]);
  return encoder.encode(token.replaceAll("▁", " "));
}

/**
 * Each token id's bytes (index = id; null: never text, or unknown). Throws for tokenizers that are not
 * generative vocabularies (WordPiece).
 */
export function tokenBytesFromTokenizerJson(json: TokenizerJsonLike): (Uint8Array | null)[] {
  const model = json.model ?? {};
  const entries: [string, number][] = [];
  if (Array.isArray(model.vocab)) {
    // Unigram: [[piece, score], ...] in id order.
    (model.vocab as unknown[]).forEach((e, id) => {
      if (Array.isArray(e) && typeof e[0] === "string") entries.push([e[0], id]);
    });
  } else if (model.vocab && typeof model.vocab === "object") {
    for (const [tok, id] of Object.entries(model.vocab as Record<string, unknown>)) {
      if (typeof id === "number") entries.push([tok, id]);
    }
  }
  if (model.type === "WordPiece") throw new Error("WordPiece vocabularies are not supported for generation");
  const types = decoderTypes(json.decoder);
  const byteLevel = types.has("ByteLevel");
  let size = 0;
  for (const [, id] of entries) size = Math.max(size, id + 1);
  for (const t of json.added_tokens ?? []) size = Math.max(size, t.id + 1);
  const out: (Uint8Array | null)[] = new Array(size).fill(null);
  for (const [tok, id] of entries) out[id] = byteLevel ? byteLevelBytes(tok) : sentencePieceBytes(tok);
  for (const t of json.added_tokens ?? []) out[t.id] = t.special ? null : encoder.encode(t.content);
  return out;
}
