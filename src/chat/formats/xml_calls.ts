// Owns the families whose calls carry their arguments as tagged key/value pairs rather than JSON, and the
// section formats with a name token then JSON: Qwen3-Coder (`<tool_call>\n<function=NAME>\n<parameter=K>\nV
// \n</parameter>\n</function>\n</tool_call>`, a JSON call object inside `<tool_call>` read too), GLM 4.5-4.7
// (`<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>`) and Kimi K2
// (`<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}
// <|tool_call_end|><|tool_calls_section_end|>`). Tagged values are typed by the tool's parameter schema
// (text for strings, JSON where it reads otherwise). Arguments grow a pair at a time while streaming.
import {
  argumentsText,
  type Family,
  joinText,
  jsonEnd,
  paramSchema,
  type ParseContext,
  type ReadCall,
  type ReadOutput,
  settled,
  typedValue,
} from "./family.ts";
import { readJsonCalls } from "./json_calls.ts";

/** `{"k": v, ...` of the pairs read so far, closed with `}` once the call is whole. */
function pairsJson(pairs: [string, unknown][], whole: boolean): string {
  const body = pairs.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ");
  return whole ? `{${body}}` : pairs.length ? `{${body}` : "";
}

/**
 * Reads blocks `open ... close` out of the text: `readBlock` turns a block's inside into a call (null: not
 * a call; it stays as text). Text between blocks is content.
 */
function readBlocks(
  text: string,
  partial: boolean,
  open: string,
  close: string,
  readBlock: (inside: string, whole: boolean) => ReadCall | null,
  /** Where the close tag may be looked for from (past values that may hold it); -1: not known yet. */
  skip: (s: string, from: number) => number = jsonSkip,
): ReadOutput {
  const out: ReadOutput = { reasoning: "", content: "", calls: [] };
  let s = text;
  for (;;) {
    const at = s.indexOf(open);
    if (at < 0) {
      out.content = joinText(out.content, settled(s, partial, [open]));
      return out;
    }
    const inside0 = at + open.length;
    const from = skip(s, inside0);
    const end = from === -1 ? -1 : s.indexOf(close, from);
    const inside = s.slice(inside0, end < 0 ? undefined : end);
    const call = readBlock(end < 0 ? settled(inside, partial, [close]) : inside, end >= 0 || !partial);
    if (call) {
      out.content = joinText(out.content, s.slice(0, at));
      out.calls.push(call);
    } else if (end >= 0 || !partial) {
      // Not a call after all: the block is text as written.
      out.content = joinText(out.content, s.slice(0, end < 0 ? undefined : end + close.length));
    } else out.content = joinText(out.content, s.slice(0, at));
    if (end < 0) return out;
    s = s.slice(end + close.length);
  }
}

/** A JSON call inside the block ends where its object does (its strings may hold anything, the close tag too). */
function jsonSkip(s: string, from: number): number {
  const lead = s.slice(from).search(/\S/);
  return lead >= 0 && s[from + lead] === "{" ? jsonEnd(s, from + lead) : from;
}

/** Past a Qwen3-Coder call's parameters: a value written as JSON (a forced call's) may hold the close tags. */
function coderSkip(s: string, from: number): number {
  const lead = s.slice(from).search(/\S/);
  if (lead >= 0 && s[from + lead] === "{") return jsonEnd(s, from + lead);
  let i = from;
  for (;;) {
    const p = /^\s*(?:<function=[^>\n]*>)?\s*<parameter=[^>\n]+>\n?/.exec(s.slice(i));
    if (!p) return i;
    const at = i + p[0].length;
    if (t(at) !== '"' && t(at) !== "{" && t(at) !== "[") {
      const c = s.indexOf("</parameter>", at);
      if (c < 0) return at;
      i = c + "</parameter>".length;
      continue;
    }
    const e = jsonEnd(s, at);
    if (e < 0) return -1;
    i = e;
  }
  function t(k: number) {
    return s[k];
  }
}

function qwenCoderBlock(inside: string, whole: boolean, ctx: ParseContext): ReadCall | null {
  const t = inside.trimStart();
  if (t.startsWith("{")) {
    const r = readJsonCalls(t);
    return r.ok && r.calls.length === 1 ? r.calls[0] : null;
  }
  const fn = /^<function=([^>\n]+)>/.exec(t);
  if (!fn) return null;
  const name = fn[1].trim();
  const pairs: [string, unknown][] = [];
  let i = fn[0].length;
  for (;;) {
    const p = /^\s*<parameter=([^>\n]+)>\n?/.exec(t.slice(i));
    if (!p) break;
    const key = p[1].trim();
    const at = i + p[0].length;
    // A value written as JSON (a forced call's) ends where its JSON does: its text may hold anything.
    const json = t[at] === '"' || t[at] === "{" || t[at] === "[" ? jsonEnd(t, at) : null;
    if (json === -1) break;
    const close = t.indexOf("</parameter>", json ?? at);
    if (close < 0) break;
    const raw = json === null ? t.slice(at, close).replace(/\n$/, "") : t.slice(at, json);
    pairs.push([key, typedValue(raw, paramSchema(ctx, name, key))]);
    i = close + "</parameter>".length;
  }
  return { name, arguments: pairsJson(pairs, whole) };
}

/**
 * The key/value pairs from `i` on (`key` matches up to the value's start; a value written as JSON ends where
 * its JSON does, so its text may hold the closing tags), and where they end (-1: a JSON value unfinished).
 */
function keyedPairs(
  t: string,
  i: number,
  key: RegExp,
  valueClose: string,
): { pairs: [string, string][]; end: number } {
  const pairs: [string, string][] = [];
  for (;;) {
    const p = key.exec(t.slice(i));
    if (!p) return { pairs, end: i };
    const at = i + p[0].length;
    const json = t[at] === '"' || t[at] === "{" || t[at] === "[" ? jsonEnd(t, at) : null;
    if (json === -1) return { pairs, end: -1 };
    const close = t.indexOf(valueClose, json ?? at);
    if (close < 0) return { pairs, end: at };
    pairs.push([p[1].trim(), json === null ? t.slice(at, close).replace(/\n$/, "") : t.slice(at, json)]);
    i = close + valueClose.length;
  }
}

const GLM_KEY = /^\s*<arg_key>([\s\S]*?)<\/arg_key>\s*<arg_value>/;

function glmSkip(s: string, from: number): number {
  const nl = s.slice(from).search(/\n|<arg_key>/);
  return nl < 0 ? from : keyedPairs(s, from + nl, GLM_KEY, "</arg_value>").end;
}

function glmBlock(inside: string, whole: boolean, ctx: ParseContext): ReadCall | null {
  const t = inside.trimStart();
  const nl = t.search(/\n|<arg_key>/);
  if (nl < 0) return whole && t.trim() && !t.includes("<") ? { name: t.trim(), arguments: "{}" } : null;
  const name = t.slice(0, nl).trim();
  if (!name || name.startsWith("{")) return null;
  const { pairs } = keyedPairs(t, nl, GLM_KEY, "</arg_value>");
  return {
    name,
    arguments: pairsJson(pairs.map(([k, v]) => [k, typedValue(v, paramSchema(ctx, name, k))]), whole),
  };
}

export const QWEN3_CODER: Family = {
  name: "qwen3_coder",
  markers: [],
  callOpeners: ["<tool_call>"],
  parse: (text, partial, ctx) =>
    readBlocks(text, partial, "<tool_call>", "</tool_call>", (b, w) => qwenCoderBlock(b, w, ctx), coderSkip),
};

export const GLM: Family = {
  name: "glm",
  markers: [],
  callOpeners: ["<tool_call>"],
  parse: (text, partial, ctx) =>
    readBlocks(text, partial, "<tool_call>", "</tool_call>", (b, w) => glmBlock(b, w, ctx), glmSkip),
};

const KIMI_SECTION = "<|tool_calls_section_begin|>";
const KIMI_SECTION_END = "<|tool_calls_section_end|>";
const KIMI_CALL = "<|tool_call_begin|>";
const KIMI_ARGS = "<|tool_call_argument_begin|>";
const KIMI_END = "<|tool_call_end|>";

function kimiBlock(inside: string, whole: boolean): ReadCall | null {
  const a = inside.indexOf(KIMI_ARGS);
  if (a < 0) return null;
  const id = inside.slice(0, a).trim();
  const name = id.replace(/^functions\./, "").replace(/:\d+$/, "");
  if (!name) return null;
  const args = inside.slice(a + KIMI_ARGS.length);
  return { name, arguments: whole ? argumentsText(args) : args };
}

export const KIMI: Family = {
  name: "kimi_k2",
  markers: [KIMI_SECTION, KIMI_SECTION_END, KIMI_CALL, KIMI_ARGS, KIMI_END],
  callOpeners: [KIMI_SECTION, KIMI_CALL],
  parse(text, partial) {
    const r = readBlocks(
      text.replaceAll(KIMI_SECTION, "").replaceAll(KIMI_SECTION_END, ""),
      partial,
      KIMI_CALL,
      KIMI_END,
      kimiBlock,
    );
    r.content = settled(r.content, partial, [KIMI_SECTION, KIMI_SECTION_END]);
    return r;
  },
};
