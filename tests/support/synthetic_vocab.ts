// Owns a deterministic stand-in for a byte-level BPE vocabulary (tests and the benchmark): special tokens
// (no bytes), all 256 single bytes, JSON punctuation runs, numbers, words with and without leading
// space/quote/punctuation, whitespace runs, escapes, whole and partial UTF-8 characters, and Hermes tool
// markup, padded with pseudo-words to the requested size. The mix and the share of tokens holding a quote,
// backslash or newline roughly follow a real 49k code+text vocabulary, which is what mask cost depends on.

export interface SyntheticVocab {
  tokens: (Uint8Array | null)[];
  eos: number[];
  /** id of each distinct token text (bytes as latin1 string), for tests that want a specific piece. */
  byText: Map<string, number>;
}

/** Small deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const encoder = new TextEncoder();

export function syntheticVocab(size = 49152, seed = 7): SyntheticVocab {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const tokens: (Uint8Array | null)[] = [];
  const byText = new Map<string, number>();
  const add = (bytes: Uint8Array) => {
    if (tokens.length >= size || bytes.length === 0) return;
    const key = String.fromCharCode(...bytes);
    if (byText.has(key)) return;
    byText.set(key, tokens.length);
    tokens.push(bytes);
  };
  const addText = (s: string) => add(encoder.encode(s));

  // Special tokens: never text. 0 and 2 end the sequence (like <|endoftext|> and <|im_end|>).
  tokens.push(null, null, null);
  const eos = [0, 2];
  for (let b = 0; b < 256; b++) add(new Uint8Array([b]));
  addText("<tool_call>");
  addText("</tool_call>");

  const punct = [
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    '{"',
    '"}',
    '":',
    '": "',
    '":"',
    '",',
    '", "',
    '","',
    '"},',
    '"}]',
    '"]',
    '["',
    '"],',
    "},",
    "}}",
    "]}",
    "}]",
    "},{",
    "}, {",
    '": {',
    '": [',
    '": [{"',
    ": ",
    ", ",
    ' "',
    ' {"',
    ' ["',
    " [",
    " {",
    " }",
    " ]",
    '\\"',
    "\\n",
    "\\\\",
    "\\u",
    "\\t",
    '."',
    '?"',
    '!"',
    '",\n',
    '"\n',
    "}\n",
    "{\n",
    "\n}",
    "\n]",
    ",\n",
    ".\n",
    ":\n",
    "\n",
    "\n\n",
    "\n\n\n",
    "\t",
    "\t\t",
    "\r\n",
    " ",
    "  ",
    "   ",
    "    ",
    "        ",
    "\n  ",
    "\n    ",
    "\n      ",
    "true",
    "false",
    "null",
    " true",
    " false",
    " null",
    "-",
    ".",
    "e",
    "E",
    "+",
    "0.",
    "-1",
    ".5",
    "\n</",
    "tool",
    "_call",
    ">\n",
    "<",
    ">",
    "</",
  ];
  for (const p of punct) addText(p);
  for (let i = 0; i < 1000; i++) addText(String(i));
  for (let i = 0; i < 100; i++) addText(String(i).padStart(2, "0"));
  for (let i = 0; i < 200; i++) addText(" " + String(i));

  const onsets = [
    "",
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "qu",
    "r",
    "s",
    "t",
    "v",
    "w",
    "z",
    "ch",
    "sh",
    "th",
    "st",
    "tr",
    "pl",
    "gr",
    "br",
  ];
  const vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y"];
  const codas = ["", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "st", "ck", "x"];
  const word = () => {
    let w = "";
    const syl = 1 + Math.floor(rand() * 3);
    for (let i = 0; i < syl; i++) w += pick(onsets) + pick(vowels) + pick(codas);
    return w;
  };
  const unicode = [
    "é",
    "è",
    "ü",
    "ö",
    "ñ",
    "ç",
    "ß",
    "ø",
    "å",
    "€",
    "£",
    "—",
    "–",
    "…",
    "“",
    "”",
    "’",
    "中",
    "文",
    "日",
    "本",
    "語",
    "한",
    "국",
    "ñ",
    "Ω",
    "π",
    "😀",
    "🚀",
    "👍",
    "🎉",
    "→",
    "✓",
    "あ",
    "い",
    "д",
    "ж",
    "я",
  ];
  const unicodeBytes = unicode.map((u) => encoder.encode(u));
  for (const u of unicode) {
    addText(u);
    addText(" " + u);
  }
  // Partial characters, as byte-level BPE produces them: lead bytes with some continuation bytes, and
  // continuation runs on their own.
  for (const b of unicodeBytes) {
    for (let cut = 1; cut < b.length; cut++) {
      add(b.slice(0, cut));
      add(b.slice(cut));
    }
  }
  for (let i = 0; i < 300; i++) {
    const a = pick(unicodeBytes), c = pick(unicodeBytes);
    const joined = new Uint8Array([...a, ...c]);
    add(joined.slice(0, 1 + Math.floor(rand() * (joined.length - 1))));
  }

  // Words in their usual dressings. Quote/newline-bearing forms are a few percent, as in real vocabularies.
  const dress = (w: string): string => {
    const r = rand();
    if (r < 0.42) return " " + w;
    if (r < 0.62) return w;
    if (r < 0.72) return " " + w[0].toUpperCase() + w.slice(1);
    if (r < 0.78) return w[0].toUpperCase() + w.slice(1);
    if (r < 0.81) return "_" + w;
    if (r < 0.84) return "." + w;
    if (r < 0.86) return w + ".";
    if (r < 0.875) return '"' + w;
    if (r < 0.885) return ' "' + w;
    if (r < 0.895) return w + '"';
    if (r < 0.9) return w + '":';
    if (r < 0.915) return w + "\n";
    if (r < 0.925) return "\n" + w;
    if (r < 0.93) return "\\" + w;
    if (r < 0.95) return w + ",";
    if (r < 0.96) return " " + w + pick(unicode);
    if (r < 0.97) return w + "(";
    if (r < 0.98) return w + ")";
    return w.toUpperCase();
  };
  let guard = 0;
  while (tokens.length < size && guard++ < size * 20) addText(dress(word()));
  while (tokens.length < size) tokens.push(null);
  return { tokens, eos, byText };
}
