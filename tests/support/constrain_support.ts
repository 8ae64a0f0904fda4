// Owns what the constrain tests share: one realistic vocabulary index, a random walker that drives a matcher
// like a sampler would (random allowed tokens, then the shortest completion once over budget), a random
// JSON Schema generator over the supported subset, and an independent validator (ajv).
import Ajv from "ajv";
import { type Grammar, maskHas, maskIds } from "../../src/chat/constrain/matcher.ts";
import { type SyntheticVocab, syntheticVocab } from "./synthetic_vocab.ts";
import { VocabIndex } from "../../src/chat/constrain/vocab.ts";

let shared: { vocab: SyntheticVocab; index: VocabIndex; byte: Int32Array } | undefined;

/** The 49152-token synthetic vocabulary and its index, built once per test process. */
export function sharedVocab(): { vocab: SyntheticVocab; index: VocabIndex; byte: Int32Array } {
  if (!shared) {
    const vocab = syntheticVocab(49152);
    const index = VocabIndex.build(vocab.tokens, vocab.eos);
    const byte = new Int32Array(256);
    for (let b = 0; b < 256; b++) byte[b] = vocab.byText.get(String.fromCharCode(b))!;
    shared = { vocab, index, byte };
  }
  return shared;
}

export interface WalkResult {
  bytes: Uint8Array;
  text: string;
  tokens: number[];
}

/**
 * Generates one document: random allowed tokens (a third of the time one holding a quote, so strings end)
 * for `budget` steps, then the matcher's shortest completion byte by byte (each byte's token must be in the
 * mask), then EOS (which must be allowed). Throws when the grammar refuses a token its mask allowed.
 */
export function randomWalk(
  g: Grammar,
  ix: VocabIndex,
  byte: Int32Array,
  rand: () => number,
  budget = 60,
): WalkResult {
  const m = g.matcher(ix);
  const out: number[] = [];
  const tokens: number[] = [];
  for (let step = 0; step < budget + 10_000; step++) {
    const mask = m.mask();
    let id: number;
    if (step < budget) {
      const ids = maskIds(mask);
      if (ids.length === 0) throw new Error(`dead end after ${JSON.stringify(decode(out))}`);
      const quoted = rand() < 0.33 ? ids.filter((i) => ix.tokens[i]?.includes(0x22)) : [];
      const from = quoted.length ? quoted : ids;
      id = from[Math.floor(rand() * from.length)];
    } else {
      const c = m.completion();
      id = c.length === 0 ? ix.eos[0] : byte[c[0]];
      if (!maskHas(mask, id)) {
        throw new Error(`completion byte ${c[0]} not allowed after ${JSON.stringify(decode(out))}`);
      }
    }
    if (!m.accept(id)) {
      throw new Error(`accept refused allowed token ${id} after ${JSON.stringify(decode(out))}`);
    }
    tokens.push(id);
    if (ix.eos.includes(id)) break;
    out.push(...ix.tokens[id]!);
  }
  if (!m.finished) throw new Error("walk did not finish");
  const bytes = new Uint8Array(out);
  return { bytes, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes), tokens };
}

function decode(b: number[]): string {
  return new TextDecoder().decode(new Uint8Array(b));
}

// ------------------------------------------------------------------------------------------- validator

// deno-lint-ignore no-explicit-any
const ajv = new (Ajv as any)({ strict: false, allErrors: false, validateSchema: false });

/** Validates with ajv (an implementation independent of ours). Returns null or the error text. */
export function validate(schema: unknown, value: unknown): string | null {
  const v = ajv.compile(schema);
  return v(value) ? null : ajv.errorsText(v.errors);
}

// ------------------------------------------------------------------------------------------- schemas

const KEYS = [
  "a",
  "ab",
  "abc",
  "b",
  "name",
  "é",
  "中文",
  'q"uote',
  "back\\slash",
  "new\nline",
  "",
  "k 1",
  "😀",
];
const STRINGS = ["x", "xy", "", "é", 'a"b', "tab\t", "中", "😀 ok", "line\nbreak", "\\", "</tool_call>"];

/**
 * A random schema over the supported subset: nested objects (all, some or no required properties; keys that
 * are prefixes of each other and need escaping), enums and consts of every type, strings, bounded and
 * unbounded numbers/integers, booleans, nulls, type arrays, arrays with min/maxItems, anyOf (also of objects
 * sharing keys), and $ref into $defs, recursive ones included.
 */
export function randomSchema(rand: () => number): Record<string, unknown> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const defs: Record<string, unknown> = {};
  let defCount = 0;

  const num = (integer: boolean): Record<string, unknown> => {
    const s: Record<string, unknown> = { type: integer ? "integer" : "number" };
    const r = rand();
    const vals = integer ? [-20, -1, 0, 3, 7, 100, 2024] : [-2.5, -1, 0, 0.1, 0.25, 3, 7.75, 99.5, 1e6];
    if (r < 0.5) {
      const a = pick(vals), b = pick(vals);
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      if (rand() < 0.5) s[rand() < 0.5 ? "minimum" : "exclusiveMinimum"] = lo;
      if (rand() < 0.6) s[rand() < 0.5 ? "maximum" : "exclusiveMaximum"] = hi + (lo === hi ? 1 : 0);
    }
    return s;
  };

  const gen = (depth: number): Record<string, unknown> => {
    const leaf = depth >= 3 || rand() < 0.25 + depth * 0.15;
    const r = rand();
    if (leaf) {
      if (r < 0.25) return { type: "string" };
      if (r < 0.35) return num(true);
      if (r < 0.45) return num(false);
      if (r < 0.5) return { type: "boolean" };
      if (r < 0.53) return { type: "null" };
      if (r < 0.68) {
        return {
          enum: Array.from({ length: 1 + Math.floor(rand() * 4) }, () => pick(STRINGS)).filter((v, i, a) =>
            a.indexOf(v) === i
          ),
        };
      }
      if (r < 0.75) {
        return { enum: [1, 12, 123, -4, 2.5, null, true, "1"].filter(() => rand() < 0.5).concat([0]) };
      }
      if (r < 0.8) return { const: pick<unknown>(["fixed", 42, false, null, { a: [1, "x"] }]) };
      if (r < 0.9) return { type: ["string", "null"] };
      return { type: ["integer", "boolean"] };
    }
    if (r < 0.4) {
      const n = Math.floor(rand() * 5);
      const names = [...new Set(Array.from({ length: n }, () => pick(KEYS)))];
      const properties: Record<string, unknown> = {};
      for (const k of names) properties[k] = gen(depth + 1);
      const mode = rand();
      const required = mode < 0.6 ? names : names.filter(() => rand() < 0.5);
      return { type: "object", properties, required, additionalProperties: false };
    }
    if (r < 0.6) {
      const s: Record<string, unknown> = { type: "array", items: gen(depth + 1) };
      if (rand() < 0.3) s.minItems = Math.floor(rand() * 3);
      if (rand() < 0.4) s.maxItems = (s.minItems as number ?? 0) + Math.floor(rand() * 3);
      return s;
    }
    if (r < 0.78) {
      // Objects sharing their first key test alternatives that stay ambiguous for a while.
      if (rand() < 0.4) {
        const shared = pick(KEYS);
        return {
          anyOf: [0, 1].map(() => ({
            type: "object",
            properties: { [shared]: gen(depth + 1), [pick(KEYS) + "2"]: gen(depth + 1) },
            required: [shared],
            additionalProperties: false,
          })),
        };
      }
      return { anyOf: Array.from({ length: 2 + Math.floor(rand() * 2) }, () => gen(depth + 1)) };
    }
    if (r < 0.9 || defCount > 3) {
      const name = `D${defCount++}`;
      defs[name] = gen(depth + 1);
      return { $ref: `#/$defs/${name}` };
    }
    // A recursive definition with a base case: a tree whose children array may be empty.
    const name = `T${defCount++}`;
    defs[name] = {
      type: "object",
      properties: {
        value: gen(depth + 1),
        children: { type: "array", items: { $ref: `#/$defs/${name}` }, maxItems: 2 },
        next: { anyOf: [{ $ref: `#/$defs/${name}` }, { type: "null" }] },
      },
      required: ["value", "children", "next"],
      additionalProperties: false,
    };
    return { $ref: `#/$defs/${name}` };
  };

  const root = rand() < 0.85 ? gen(0) : gen(2);
  const body = root.type === "object" || rand() < 0.3 ? root : {
    type: "object",
    properties: { result: root },
    required: ["result"],
    additionalProperties: false,
  };
  return Object.keys(defs).length ? { ...body, $defs: defs } : body;
}
