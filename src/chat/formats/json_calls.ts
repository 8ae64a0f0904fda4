// Owns reading JSON call objects (`{"name": ..., "arguments": {...}}` and the families' variants of the key
// names) out of a list or a single object, as far as they have arrived: the name once its string closes,
// the arguments' text as it grows (CallScanner). Shared by the families that write calls as JSON after a
// marker (Phi-4-mini, Granite, Command R/A, the generic fallback).
import { CallScanner } from "../tools/call_scanner.ts";
import { argumentsText, type ReadCall } from "./family.ts";

export interface JsonCallKeys {
  names?: readonly string[];
  args?: readonly string[];
}

export interface JsonCallsRead {
  calls: ReadCall[];
  /** Offset just past the list (or the object), or -1 while it is unfinished. */
  end: number;
  /** Everything read is calls so far; false: not calls (a list of something else, or broken). */
  ok: boolean;
}

/** Reads `[{...}, {...}]` or one `{...}` at the start of `s` (after whitespace). */
export function readJsonCalls(s: string, keys: JsonCallKeys = {}): JsonCallsRead {
  const calls: ReadCall[] = [];
  let i = 0;
  while (i < s.length && /\s/.test(s[i])) i++;
  if (i >= s.length) return { calls, end: -1, ok: true };
  const list = s[i] === "[";
  if (!list && s[i] !== "{") return { calls, end: -1, ok: false };
  if (list) i++;
  for (;;) {
    while (i < s.length && (/\s/.test(s[i]) || (list && s[i] === ","))) i++;
    if (i >= s.length) return { calls, end: -1, ok: true };
    if (list && s[i] === "]") return { calls, end: i + 1, ok: true };
    if (s[i] !== "{") return { calls, end: -1, ok: false };
    const sc = new CallScanner(keys.args ?? ["arguments", "parameters"], keys.names ?? ["name"]);
    let args = "", done = false;
    for (; i < s.length; i++) {
      const r = sc.feed(s[i]);
      args += sc.take();
      if (r === "error") return { calls, end: -1, ok: false };
      if (r === "done") {
        i++;
        done = true;
        break;
      }
    }
    if (sc.name !== null) {
      calls.push({ name: sc.name, arguments: done ? argumentsText(sc.argsBegun ? args : "{}") : args });
    } else if (done) return { calls, end: -1, ok: false };
    if (!done) return { calls, end: -1, ok: true };
    if (!list) return { calls, end: i, ok: true };
  }
}
