// Tests token texts for logprobs: byte-level, byte-fallback and SentencePiece tokens, special tokens, and
// tokens that are not valid UTF-8 on their own.
import assert from "node:assert/strict";
import { TokenTexts } from "./token_texts.ts";

const bytesOf = (s: string) => [...new TextEncoder().encode(s)];

Deno.test("TokenTexts: byte-level, byte-fallback and special tokens; partial UTF-8 shows as bytes", () => {
  const vocab = new Map<number, string>([
    [0, "Ġhello"],
    [1, "<0xE2>"],
    [2, "Ã©"],
    [3, "<|im_end|>"],
    [4, "æĿ"],
  ]);
  const texts = new TokenTexts((id) => vocab.get(id), () => "?", true, new Set([3]));
  assert.deepEqual(texts.get(0), { text: " hello", bytes: bytesOf(" hello") });
  assert.deepEqual(texts.get(1), { text: "bytes:\\xe2", bytes: [0xe2] });
  assert.deepEqual(texts.get(2), { text: "é", bytes: bytesOf("é") });
  assert.deepEqual(texts.get(3), { text: "<|im_end|>", bytes: bytesOf("<|im_end|>") });
  assert.deepEqual(texts.get(4).bytes, bytesOf("東").slice(0, 2));
  const sp = new TokenTexts((id) => (id === 0 ? "\u2581hi" : undefined), () => "x", false);
  assert.deepEqual(sp.get(0), { text: " hi", bytes: bytesOf(" hi") });
  assert.deepEqual(sp.get(7), { text: "x", bytes: bytesOf("x") });
});
