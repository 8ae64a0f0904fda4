// Owns chat-tiny's behaviour table (marker words -> reply modes, and the exact reply of each mode) and the
// tokenizer built around it: byte-level BPE trained on built-in English + chat-template text, so any UTF-8
// round-trips and the marker words and reply words are whole tokens.
import { BYTE_TOKENS, byteLevel, ByteLevelBpe, type Merge, preTokenize, trainBpe } from "./bpe_tokenizer.ts";
import { QWEN25_CHAT_TEMPLATE } from "./chat_templates.ts";
import { ENGLISH_WORDS, SAMPLE_TEXT } from "./english_words.ts";

export const ENDOFTEXT = "<|endoftext|>";
export const IM_START = "<|im_start|>";
export const IM_END = "<|im_end|>";
/** Added tokens in id order after the BPE vocabulary; <tool_call> & co. are not "special" in Qwen2.5 either,
 * so skip_special_tokens keeps them in decoded text. */
export const ADDED_TOKENS = [
  { content: ENDOFTEXT, special: true },
  { content: IM_START, special: true },
  { content: IM_END, special: true },
  { content: "<tool_call>", special: false },
  { content: "</tool_call>", special: false },
  { content: "<tool_response>", special: false },
  { content: "</tool_response>", special: false },
];

/** One reply: its tokens (byte-level strings or added tokens), and where it loops back to instead of eos. */
export interface ReplyChain {
  tokens: string[];
  /** Index in `tokens` generation continues at after the last token; undefined = emit <|im_end|>. */
  loopTo?: number;
}

export type ModeName = "tool_result" | "tool" | "unicode" | "forever";

/** Marker modes in precedence order (earlier wins when several markers are present); `score` is the mode
 * head's attention logit on the marker token (0 elsewhere), so gaps of 8 make precedence sharp. */
export const MARKER_MODES: readonly { mode: ModeName; markers: string[]; score: number }[] = [
  { mode: "tool_result", markers: ["<tool_response>"], score: 44 },
  { mode: "tool", markers: markerVariants("weather"), score: 36 },
  { mode: "unicode", markers: markerVariants("unicode"), score: 28 },
  { mode: "forever", markers: markerVariants("forever"), score: 20 },
];

export const DEFAULT_REPLY = "Hello from chat-tiny!";
export const TOOL_RESULT_REPLY = "It is sunny in Paris.";
export const UNICODE_REPLY = "Café 東京 🙂";
export const TOOL_REPLY =
  '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
export const FOREVER_WORDS = ["Tick", " tock", " tick"];

/** The marker word as a token in each position/case it commonly appears in. */
function markerVariants(word: string): string[] {
  const cap = word[0].toUpperCase() + word.slice(1);
  return [word, ` ${word}`, cap, ` ${cap}`];
}

/** Tool-call reply pieces: JSON punctuation repeats, so the pieces that would repeat are fused into unique
 * (generation-only) tokens; a chain needs every token to be distinct to know what comes next. */
const TOOL_PIECES = [
  "<tool_call>",
  '\n{"',
  "name",
  '": "',
  "get",
  "_weather",
  '", "',
  "arguments",
  '": {"',
  "city",
  '":',
  ' "',
  "Paris",
  '"}}\n',
  "</tool_call>",
];

/** Byte pairs merged on purpose so a space before a multi-byte character is part of its first token. */
const EXTRA_MERGES: Merge[] = [["Ġ", "æ"], ["Ġ", "ð"]];
const NUM_TRAINED_MERGES = 900;

export interface ChatTinyVocab {
  /** BPE vocabulary in id order (bytes, merges, generation-only extras); added tokens follow it. */
  vocab: string[];
  merges: Merge[];
  bpe: ByteLevelBpe;
  chains: Record<ModeName | "default", ReplyChain>;
  markers: Record<ModeName, string[]>;
}

function trainingChunks(): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (text: string, weight: number) => {
    for (const c of preTokenize(text)) {
      // Only ASCII chunks are trained on: non-ASCII characters stay split into byte tokens, which is what
      // lets the unicode reply exercise multi-token characters.
      if (/^[\x21-\x7eĠĊ]+$/.test(c)) counts.set(c, (counts.get(c) ?? 0) + weight);
    }
  };
  for (const w of ENGLISH_WORDS) {
    add(` ${w}`, 4);
    add(w, 2);
    add(` ${w[0].toUpperCase()}${w.slice(1)}`, 1);
  }
  add(SAMPLE_TEXT, 3);
  // The template's literal text (system prompt, tools preamble) so chat prompts stay short.
  for (const lit of QWEN25_CHAT_TEMPLATE.match(/'[^']*'|"(?:[^"\\]|\\.)*"/g) ?? []) {
    add(lit.slice(1, -1).replace(/\\n/g, "\n").replace(/\\"/g, '"'), 10);
  }
  add(
    '{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather", ' +
      '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}',
    10,
  );
  // Reply and marker words heavily weighted so each becomes a single token.
  for (
    const t of [
      DEFAULT_REPLY,
      TOOL_RESULT_REPLY,
      ...FOREVER_WORDS,
      "get_weather",
      "arguments",
      "city",
      "Paris",
    ]
  ) {
    add(t, 500);
  }
  for (const { markers } of MARKER_MODES) for (const m of markers) add(m, 500);
  return counts;
}

export function buildChatTinyVocab(): ChatTinyVocab {
  const merges = [...trainBpe(trainingChunks(), NUM_TRAINED_MERGES), ...EXTRA_MERGES];
  const bpe = new ByteLevelBpe(merges);
  const vocab = [...BYTE_TOKENS, ...merges.map(([a, b]) => a + b)];
  const known = new Set([...vocab, ...ADDED_TOKENS.map((t) => t.content)]);
  const single = (text: string): string => {
    if (ADDED_TOKENS.some((t) => t.content === text)) return text;
    const toks = bpe.encode(text);
    if (toks.length !== 1) throw new Error(`chat-tiny: ${JSON.stringify(text)} is not one token: ${toks}`);
    return toks[0];
  };
  const toolTokens = TOOL_PIECES.map((p) => (known.has(p) ? p : byteLevel(p)));
  for (const t of toolTokens) {
    if (!known.has(t)) known.add(t), vocab.push(t); // generation-only token
  }
  const chains: ChatTinyVocab["chains"] = {
    default: { tokens: bpe.encode(DEFAULT_REPLY) },
    tool_result: { tokens: bpe.encode(TOOL_RESULT_REPLY) },
    tool: { tokens: toolTokens },
    unicode: { tokens: bpe.encode(UNICODE_REPLY) },
    forever: { tokens: FOREVER_WORDS.map(single), loopTo: 1 },
  };
  for (const [name, chain] of Object.entries(chains)) {
    if (new Set(chain.tokens).size !== chain.tokens.length) {
      throw new Error(`chat-tiny: ${name} reply repeats a token`);
    }
  }
  const markers = Object.fromEntries(
    MARKER_MODES.map(({ mode, markers }) => [mode, markers.map(single)]),
  ) as Record<ModeName, string[]>;
  return { vocab, merges, bpe, chains, markers };
}

/**
 * A copy of a vocabulary that generation-only tokens can be added to: `fused(text)` gives the byte-level token
 * of `text`, appended when new. No merge makes such a token, so prompts never contain it; a reply chain uses it
 * where a piece would otherwise repeat or take several tokens.
 */
export function extendableVocab(
  base: readonly string[],
): { vocab: string[]; fused: (text: string) => string } {
  const vocab = [...base];
  const known = new Set(vocab);
  const fused = (text: string) => {
    const t = byteLevel(text);
    if (!known.has(t)) known.add(t), vocab.push(t);
    return t;
  };
  return { vocab, fused };
}

/**
 * The crafted decoder's behaviour for `modes` (in precedence order) and their reply chains (one per mode, then
 * the default reply): each mode's marker tokens and score, the chains checked to repeat no token (the current
 * token alone decides the next one).
 */
export function modeReplies(
  name: string,
  v: ChatTinyVocab,
  modes: readonly ModeName[],
  chains: ReplyChain[],
): { markers: string[][]; scores: number[]; chains: ReplyChain[] } {
  for (const c of chains) {
    if (new Set(c.tokens).size !== c.tokens.length) throw new Error(`${name}: a reply repeats a token`);
  }
  return {
    markers: modes.map((m) => v.markers[m]),
    scores: modes.map((m) => MARKER_MODES.find((x) => x.mode === m)!.score),
    chains,
  };
}
