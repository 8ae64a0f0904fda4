// Owns the pythonic call formats: a list of Python calls with keyword arguments, `[get_weather(city="Paris"),
// get_time(tz='CET')]`. Llama 4 writes the list as its whole reply (or between `<|python_start|>` and
// `<|python_end|>`), LFM2 between `<|tool_call_start|>` and `<|tool_call_end|>`, and Gemma 3 (no call syntax of
// its own; the server prompts it with Google's documented convention) in a ```` ```tool_code ```` fence.
// Argument values are Python literals (strings, numbers, True/False/None, lists, dicts) turned into JSON; a
// call is reported once its closing parenthesis arrives (its arguments whole at once).
import type { Family, ReadCall, ReadOutput } from "./family.ts";
import { joinText, settled } from "./family.ts";

type Lit = { v: unknown; end: number } | "more" | "error";

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*/;

function ws(s: string, i: number): number {
  while (i < s.length && /\s/.test(s[i])) i++;
  return i;
}

function literal(s: string, i: number): Lit {
  i = ws(s, i);
  if (i >= s.length) return "more";
  const c = s[i];
  if (c === '"' || c === "'") {
    let out = "";
    for (let j = i + 1; j < s.length; j++) {
      const ch = s[j];
      if (ch === "\\") {
        if (j + 1 >= s.length) return "more";
        const e = s[++j];
        if (e === "u") {
          // A JSON-style \uXXXX escape (values written as JSON by a forced call).
          if (j + 4 >= s.length) return "more";
          out += String.fromCharCode(parseInt(s.slice(j + 1, j + 5), 16));
          j += 4;
        } else {out += e === "n"
            ? "\n"
            : e === "t"
            ? "\t"
            : e === "r"
            ? "\r"
            : e === "b"
            ? "\b"
            : e === "f"
            ? "\f"
            : e;}
      } else if (ch === c) return { v: out, end: j + 1 };
      else out += ch;
    }
    return "more";
  }
  if (c === "[" || c === "(" || c === "{") {
    const close = c === "[" ? "]" : c === "(" ? ")" : "}";
    const arr: unknown[] = [];
    const obj: Record<string, unknown> = {};
    let j = i + 1;
    for (;;) {
      j = ws(s, j);
      if (j >= s.length) return "more";
      if (s[j] === close) return { v: c === "{" ? obj : arr, end: j + 1 };
      const item = literal(s, j);
      if (typeof item === "string") return item;
      j = ws(s, item.end);
      if (c === "{") {
        if (j >= s.length) return "more";
        if (s[j] !== ":") return "error";
        const val = literal(s, j + 1);
        if (typeof val === "string") return val;
        obj[String(item.v)] = val.v;
        j = ws(s, val.end);
      } else arr.push(item.v);
      if (j >= s.length) return "more";
      if (s[j] === ",") j++;
      else if (s[j] !== close) return "error";
    }
  }
  const m = /^[^\s,)\]}:]+/.exec(s.slice(i));
  if (!m) return "error";
  if (i + m[0].length >= s.length) return "more";
  const w = m[0];
  if (w === "True" || w === "true") return { v: true, end: i + w.length };
  if (w === "False" || w === "false") return { v: false, end: i + w.length };
  if (w === "None" || w === "null") return { v: null, end: i + w.length };
  const n = Number(w);
  return Number.isFinite(n) ? { v: n, end: i + w.length } : "error";
}

/** One `name(k=v, ...)` at `i`: the call and its end, or "more"/"error". */
function pyCall(s: string, i: number): { call: ReadCall; end: number } | "more" | "error" {
  i = ws(s, i);
  const m = NAME.exec(s.slice(i));
  if (!m) return i >= s.length ? "more" : "error";
  let j = i + m[0].length;
  if (j >= s.length) return "more";
  if (s[j] !== "(") return "error";
  j++;
  const args: Record<string, unknown> = {};
  for (;;) {
    j = ws(s, j);
    if (j >= s.length) return "more";
    if (s[j] === ")") return { call: { name: m[0], arguments: JSON.stringify(args) }, end: j + 1 };
    const k = /^([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(s.slice(j));
    if (!k) return /^[A-Za-z0-9_\s]*$/.test(s.slice(j)) ? "more" : "error";
    const v = literal(s, j + k[0].length);
    if (typeof v === "string") return v;
    args[k[1]] = v.v;
    j = ws(s, v.end);
    if (j >= s.length) return "more";
    if (s[j] === ",") j++;
    else if (s[j] !== ")") return "error";
  }
}

/** Calls in `s` (a `[...]` list, or calls one per line): the complete ones, and whether all of `s` is calls. */
export function readPyCalls(s: string): { calls: ReadCall[]; end: number; ok: boolean } {
  const calls: ReadCall[] = [];
  let i = ws(s, 0);
  const list = s[i] === "[";
  if (list) i++;
  for (;;) {
    i = ws(s, i);
    if (i >= s.length) return { calls, end: -1, ok: true };
    if (list && s[i] === "]") return { calls, end: i + 1, ok: calls.length > 0 };
    if (!list && calls.length && !/^[A-Za-z_]/.test(s[i])) return { calls, end: i, ok: true };
    const c = pyCall(s, i);
    if (c === "more") return { calls, end: -1, ok: true };
    if (c === "error") return { calls, end: -1, ok: false };
    calls.push(c.call);
    i = ws(s, c.end);
    if (s[i] === ",") i++;
  }
}

/** A reader for calls between `open` and `close` markers ("" open: a bare list as the whole reply). */
function pythonic(name: string, open: string, close: string, markers: string[] = []): Family {
  const parse = (text: string, partial: boolean): ReadOutput => {
    const none = (content: string): ReadOutput => ({ reasoning: "", content, calls: [] });
    let at: number, bodyStart: number;
    if (open) {
      at = text.indexOf(open);
      if (at < 0) return none(settled(text, partial, [open]));
      bodyStart = at + open.length;
    } else {
      // A bare list: only as the whole reply.
      const lead = text.trimStart();
      if (!lead.startsWith("[")) return none(lead ? text : "");
      at = text.length - lead.length;
      bodyStart = at;
    }
    // The calls are read first: a string value may hold the close marker.
    const rest = text.slice(bodyStart);
    const r = readPyCalls(rest);
    if (!r.ok) return none(text);
    if (r.end < 0) {
      return partial ? { reasoning: "", content: text.slice(0, at), calls: r.calls } : none(text);
    }
    if (r.calls.length === 0) return none(text);
    let after = rest.slice(r.end);
    if (close) {
      const t = after.trimStart();
      if (t.startsWith(close)) after = t.slice(close.length);
      else if (partial && close.startsWith(t)) after = "";
    }
    // A bare list is a call list only as the whole reply.
    if (!open && after.trim() && !partial) return none(text);
    return {
      reasoning: "",
      content: joinText(text.slice(0, at), settled(after, partial, open ? [open] : [])),
      calls: r.calls,
    };
  };
  const writeCalls = (calls: readonly { name: string; arguments: string }[]) => {
    const list = calls.map((c) => {
      let args: Record<string, unknown> = {};
      try {
        args = JSON.parse(c.arguments);
      } catch { /* no arguments then */ }
      const kw = Object.entries(args ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
      return `${c.name}(${kw})`;
    }).join(", ");
    return open === "```tool_code" ? `${open}\n${list}\n${close}` : `${open}[${list}]${close}`;
  };
  return { name, markers, callOpeners: open ? [open] : [], parse, writeCalls };
}

export const LLAMA4 = pythonic("llama4", "", "");
export const LFM2 = pythonic("lfm2", "<|tool_call_start|>", "<|tool_call_end|>", [
  "<|tool_call_start|>",
  "<|tool_call_end|>",
]);
export const GEMMA = pythonic("gemma", "```tool_code", "```");
