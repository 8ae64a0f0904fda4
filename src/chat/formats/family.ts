// Owns what a model family's output format is (issue 30): how its replies are read back into reasoning,
// content and tool calls. Each family is a pure `parse(text, partial)` over the whole reply so far (the
// stream adapter in stream.ts re-reads it after every piece and sends on what grew), which keeps every
// family a short reader of its own markup instead of a character state machine. A partial read never
// reports what could still change: a marker still arriving is held back, a call shows once its name is
// whole, and its arguments grow only. Whatever a family cannot read comes back as content, never dropped.

/** One call as read so far. */
export interface ReadCall {
  name: string;
  /** JSON text of the arguments as far as it is known (grows only while the reply streams). */
  arguments: string;
}

/** A reply read back. */
export interface ReadOutput {
  reasoning: string;
  content: string;
  calls: ReadCall[];
  /**
   * Set by a reader (partial reads) when appending any text without the family's `triggers` characters
   * to the reply appends exactly that text to this field (of the last call, for "args"): the stream adapter
   * then extends the field instead of reading the whole reply again (long thoughts and arguments would make
   * every token cost the length of the reply).
   */
  tail?: "reasoning" | "content" | "args";
}

/** What a family knows of the request: the tools offered (for typing XML/pythonic argument values). */
export interface ParseContext {
  /** Parameter JSON Schemas by tool name. */
  schemas: ReadonlyMap<string, unknown>;
}

export interface Family {
  /** Short name (`deepseek_v3`, `harmony`, ...): logs, the README table, tests. */
  readonly name: string;
  /**
   * Control tokens the reader needs to see: the pipeline decodes them as their text (llama.cpp's
   * "preserved tokens"), where other special tokens decode to nothing.
   */
  readonly markers: readonly string[];
  /**
   * What starts a call: under tool_choice "none" each of these that is one token of the vocabulary is
   * masked, so the model answers in text.
   */
  readonly callOpeners: readonly string[];
  /** Characters that may begin the family's markup (with `tail`: text without them only extends a field). */
  readonly triggers?: string;
  /** The family writes its reasoning itself (Harmony's analysis channel), not through `<think>` blocks. */
  readonly ownsReasoning?: boolean;
  parse(text: string, partial: boolean, ctx: ParseContext): ReadOutput;
  /**
   * The family's own text for calls of an earlier assistant turn, for templates that render only the
   * content of such turns (LFM2's and Phi-4-mini's expect the call written there, as the model wrote it).
   */
  writeCalls?(calls: readonly { name: string; arguments: string }[]): string;
}

export const NO_SCHEMAS: ParseContext = { schemas: new Map() };

/** Length of the longest suffix of `text` that is a proper prefix of one of `markers` (held back). */
export function heldSuffix(text: string, markers: readonly string[]): number {
  let best = 0;
  for (const m of markers) {
    for (let n = Math.min(m.length - 1, text.length); n > best; n--) {
      if (m.startsWith(text.slice(text.length - n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}

/** `text` less a trailing piece that may still become one of `markers` (partial reads only). */
export function settled(text: string, partial: boolean, markers: readonly string[]): string {
  return partial ? text.slice(0, text.length - heldSuffix(text, markers)) : text;
}

/** Two runs of content either side of markup, with the whitespace that touched the markup dropped. */
export function joinText(a: string, b: string): string {
  const x = a.trimEnd(), y = b.trimStart();
  return x && y ? `${x}\n${y}` : x + y;
}

/**
 * Reads a JSON value at the start of `s` (after whitespace): its end offset, or -1 while it is unfinished.
 * Strings, nesting and escapes are followed; the value's own validity is not checked.
 */
export function jsonEnd(s: string, from = 0): number {
  let i = from;
  while (i < s.length && /\s/.test(s[i])) i++;
  if (i >= s.length) return -1;
  const c = s[i];
  if (c === '"') {
    for (let j = i + 1; j < s.length; j++) {
      if (s[j] === "\\") j++;
      else if (s[j] === '"') return j + 1;
    }
    return -1;
  }
  if (c !== "{" && c !== "[") {
    const m = /^[^\s,\]}]+/.exec(s.slice(i));
    return m && i + m[0].length < s.length ? i + m[0].length : -1;
  }
  let depth = 0, inStr = false;
  for (let j = i; j < s.length; j++) {
    const ch = s[j];
    if (inStr) {
      if (ch === "\\") j++;
      else if (ch === '"') inStr = false;
    } else if (ch === '"') inStr = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      if (--depth === 0) return j + 1;
    }
  }
  return -1;
}

/** Arguments as JSON text: objects pass as written, a JSON-encoded string is unwrapped, empty is `{}`. */
export function argumentsText(raw: string): string {
  const t = raw.trim();
  if (t === "" || t === "null") return "{}";
  if (t.startsWith('"')) {
    try {
      const inner = JSON.parse(t);
      if (typeof inner === "string") return inner.trim() === "" ? "{}" : inner;
    } catch { /* as written */ }
  }
  return t;
}

/** A parameter value written as text (XML-style formats) typed by the tool's schema: JSON where it reads. */
export function typedValue(raw: string, schema: unknown): unknown {
  const type = (schema as { type?: unknown } | undefined)?.type;
  const types = Array.isArray(type) ? type : type === undefined ? [] : [type];
  if (types.length === 1 && types[0] === "string") {
    // A forced call writes its values as JSON (constrain/tool_grammar.ts): a quoted string is unquoted.
    if (/^"(?:[^"\\]|\\.)*"$/.test(raw)) {
      try {
        return JSON.parse(raw);
      } catch { /* as written */ }
    }
    return raw;
  }
  try {
    const v = JSON.parse(raw);
    if (types.length === 0 && typeof v === "string") return v;
    return v;
  } catch {
    return raw;
  }
}

/** The schema of one parameter of a tool, when the request declared it. */
export function paramSchema(ctx: ParseContext, tool: string, param: string): unknown {
  const s = ctx.schemas.get(tool) as { properties?: Record<string, unknown> } | undefined;
  return s?.properties?.[param];
}

/** Arguments' JSON text as a value (an object for a template or a call list); text that is no JSON stays text. */
export function jsonOrText(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
