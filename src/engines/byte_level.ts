// Owns GPT-2's byte-level alphabet, which byte-level BPE vocabularies (GPT-2, Qwen, SmolLM, Llama 3) write
// their tokens in: each byte is a printable code point (Ġ is the space, Ċ the newline). Whoever needs a
// token's bytes from its vocabulary string reads them through this one table.

/** Code point of a byte-level vocabulary character -> the byte it stands for. */
export const UNICODE_TO_BYTE: ReadonlyMap<number, number> = (() => {
  const bs: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  }
  return new Map(cs.map((c, i) => [c, bs[i]]));
})();

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A token's display text for logprobs: its UTF-8, or `bytes:\xe2\x80` when the bytes are not valid UTF-8 on
 * their own (part of a character), as OpenAI shows them.
 */
export function tokenDisplayText(bytes: readonly number[]): string {
  try {
    return strictUtf8.decode(new Uint8Array(bytes));
  } catch {
    return "bytes:" + bytes.map((b) => "\\x" + b.toString(16).padStart(2, "0")).join("");
  }
}
