// Owns the BERT-style WordPiece tokenizer files (tokenizer.json in the HF `tokenizers` format, plus
// tokenizer_config.json, special_tokens_map.json and vocab.txt) for the generated encoder models.
import { join } from "node:path";
import { ENGLISH_WORDS } from "./english_words.ts";

export const BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] as const;

const LETTERS = "abcdefghijklmnopqrstuvwxyz";
/** Everything a lowercased, accent-stripped BertNormalizer can leave behind in ordinary text. */
const CHARS = [
  ...LETTERS,
  ..."0123456789",
  ..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
  ..."αβγδεζηθικλμνξοπρστυφχψω",
  ..."абвгдежзийклмнопрстуфхцчшщъыьэюя",
];
const SUFFIXES = [
  "s",
  "es",
  "ed",
  "er",
  "ers",
  "est",
  "ing",
  "ly",
  "ment",
  "ness",
  "tion",
  "sion",
  "able",
  "ful",
  "less",
  "al",
];

/**
 * Vocabulary: specials, single characters and their `##` continuations (so any letter sequence tokenizes
 * without [UNK]), common suffixes, every two-letter pair and its `##` form, then common English words; padded
 * with [unusedN] entries up to `size` when an exact real-model vocab size is wanted.
 */
export function wordPieceVocab(size?: number): string[] {
  const vocab: string[] = [...BERT_SPECIALS];
  const seen = new Set(vocab);
  const add = (t: string) => {
    if (!seen.has(t)) seen.add(t), vocab.push(t);
  };
  for (const c of CHARS) add(c);
  for (const c of CHARS) add(`##${c}`);
  for (const s of SUFFIXES) add(`##${s}`);
  for (const a of LETTERS) for (const c of LETTERS) add(a + c);
  for (const a of LETTERS) for (const c of LETTERS) add(`##${a}${c}`);
  for (const w of ENGLISH_WORDS) if (/^[a-z]+$/.test(w)) add(w);
  if (size !== undefined) {
    if (vocab.length > size) {
      throw new Error(`WordPiece vocab has ${vocab.length} entries, more than ${size}`);
    }
    for (let i = 0; vocab.length < size; i++) add(`[unused${i}]`);
  }
  return vocab;
}

function addedToken(id: number, content: string) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

export async function writeWordPieceTokenizer(
  dir: string,
  vocab: string[],
  modelMaxLength: number,
): Promise<void> {
  const id = (t: string) => vocab.indexOf(t);
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: BERT_SPECIALS.map((t) => addedToken(id(t), t)),
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
        { Sequence: { id: "B", type_id: 1 } },
        { SpecialToken: { id: "[SEP]", type_id: 1 } },
      ],
      special_tokens: Object.fromEntries(
        ["[CLS]", "[SEP]"].map((t) => [t, { id: t, ids: [id(t)], tokens: [t] }]),
      ),
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: {
      type: "WordPiece",
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
    },
  };
  const config = {
    added_tokens_decoder: Object.fromEntries(BERT_SPECIALS.map((t) => [String(id(t)), addedToken(id(t), t)])),
    clean_up_tokenization_spaces: true,
    cls_token: "[CLS]",
    do_basic_tokenize: true,
    do_lower_case: true,
    mask_token: "[MASK]",
    model_max_length: modelMaxLength,
    never_split: null,
    pad_token: "[PAD]",
    sep_token: "[SEP]",
    strip_accents: null,
    tokenize_chinese_chars: true,
    tokenizer_class: "BertTokenizer",
    unk_token: "[UNK]",
  };
  const specialMap = {
    cls_token: "[CLS]",
    mask_token: "[MASK]",
    pad_token: "[PAD]",
    sep_token: "[SEP]",
    unk_token: "[UNK]",
  };
  await Deno.writeTextFile(join(dir, "tokenizer.json"), JSON.stringify(tokenizer, null, 2) + "\n");
  await Deno.writeTextFile(join(dir, "tokenizer_config.json"), JSON.stringify(config, null, 2) + "\n");
  await Deno.writeTextFile(join(dir, "special_tokens_map.json"), JSON.stringify(specialMap, null, 2) + "\n");
  await Deno.writeTextFile(join(dir, "vocab.txt"), vocab.join("\n") + "\n");
}
