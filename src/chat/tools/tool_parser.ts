// Owns turning a model's text into content plus tool calls, incrementally: fed text deltas in any chunking,
// it emits plain-content deltas (never any tool-call markup: a possible partial marker is held back) and,
// per call, a start (index, name) once the name is known, argument fragments as they arrive, and an end.
// Formats (formats.ts): Hermes/Qwen `<tool_call>{...}</tool_call>` blocks anywhere in the text; Mistral
// `[TOOL_CALLS] [{...}, ...]`; Llama 3 JSON `{"name": ..., "parameters": ...}` as the whole reply (or after
// <|python_tag|>). Whitespace just before a call block and just after it is dropped from the content.
// A block whose name never arrives is dropped (reported as an "invalid" event), never shown as content.
// `parseToolCalls` is the same machine run over a whole text; `ToolOutputParser` adapts it to the chat
// engine's ChatOutputParser (call ids, finish reason "tool_calls").
import type {
  ChatDelta,
  ChatFinishReason,
  ChatOutputParser,
  ChatToolCallDelta,
} from "../../engines/types.ts";
import { CallScanner } from "./call_scanner.ts";
import { HERMES, type ToolCallFormat } from "./formats.ts";
import { randomId } from "../../ids.ts";

export type ToolEvent =
  | { type: "content"; text: string }
  | { type: "start"; index: number; name: string }
  | { type: "args"; index: number; text: string }
  | { type: "end"; index: number }
  | { type: "invalid"; text: string };

export interface ParsedToolCall {
  name: string;
  /** JSON text of the arguments ("{}" when there were none). */
  arguments: string;
}

const enum M {
  Text,
  Call,
  /** Hermes: after a call object, before its close tag. */
  Close,
  /** Hermes: a broken block; dropped up to its close tag. */
  Skip,
  /** Mistral: after the marker, before `[` (or a bare object). */
  ListStart,
  /** Mistral: inside the list, between calls. */
  ListItem,
  /** Llama 3: between calls (`;` separated). */
  Calls,
  /** Everything left is dropped (a broken Mistral list). */
  Drop,
}

const isWs = (c: string) => c === " " || c === "\n" || c === "\t" || c === "\r";

export class ToolCallStreamParser {
  readonly #f: ToolCallFormat;
  /** The text that switches to tool-call mode. */
  readonly #marker: string;
  readonly #closeTag: string;
  #mode = M.Text;
  #afterCall = M.Text;
  #events: ToolEvent[] = [];
  #content = "";
  #wsHold = "";
  #dropLeading = false;
  /** Length of the marker (Text) or close tag (Close/Skip) matched so far. */
  #match = 0;
  #scanner: CallScanner | null = null;
  #raw = "";
  #index = -1;
  #started = false;
  #argsSent = false;
  #pendingArgs = "";
  /** Llama 3: the reply so far is only whitespace (a call may still start it). */
  #atStart = true;
  /** Llama 3: the reply began with a JSON object that might not be a call yet; its text is kept. */
  #tentative = false;
  #calls = 0;

  constructor(format: ToolCallFormat = HERMES) {
    this.#f = format;
    this.#marker = format.name === "hermes"
      ? format.open.trimEnd()
      : format.name === "mistral"
      ? "[TOOL_CALLS]"
      : "<|python_tag|>";
    this.#closeTag = format.close.trim();
  }

  /** Calls started so far. */
  get calls(): number {
    return this.#calls;
  }

  push(text: string): ToolEvent[] {
    for (const c of text) this.#char(c);
    return this.#flush();
  }

  /** Ends the stream: a held partial marker is content after all; an unfinished call ends as it stands. */
  end(): ToolEvent[] {
    if (this.#mode === M.Text) {
      if (this.#match > 0) {
        const held = this.#marker.slice(0, this.#match);
        this.#match = 0;
        for (const c of held) this.#textChar(c, false);
      }
      if (!this.#dropLeading) this.#content += this.#wsHold;
      this.#wsHold = "";
    } else if (this.#mode === M.Call) {
      if (this.#tentative) {
        this.#abortTentative();
        if (!this.#dropLeading) this.#content += this.#wsHold;
        this.#wsHold = "";
      } else this.#endCall();
    }
    this.#mode = M.Drop;
    return this.#flush();
  }

  #flush(): ToolEvent[] {
    if (this.#content) this.#events.push({ type: "content", text: this.#content });
    this.#content = "";
    if (this.#scanner && this.#started) this.#args(this.#scanner.take());
    const out = this.#events;
    this.#events = [];
    return out;
  }

  #char(c: string): void {
    switch (this.#mode) {
      case M.Text:
        if (this.#f.name === "llama3" && this.#atStart && !this.#match && c === "{") {
          this.#tentative = true;
          this.#raw = "";
          this.#beginCall(M.Calls);
          this.#callChar(c);
          return;
        }
        this.#textChar(c, true);
        return;
      case M.Call:
        this.#callChar(c);
        return;
      case M.Close:
        if (this.#match === 0 && isWs(c)) return;
        if (c === this.#closeTag[this.#match]) {
          if (++this.#match === this.#closeTag.length) this.#toText();
          return;
        }
        // No close tag after all: what was taken for one is text again.
        {
          const held = this.#closeTag.slice(0, this.#match);
          this.#toText();
          for (const h of held) this.#char(h);
          this.#char(c);
        }
        return;
      case M.Skip:
        if (c === this.#closeTag[this.#match]) {
          if (++this.#match === this.#closeTag.length) this.#toText();
        } else this.#match = c === this.#closeTag[0] ? 1 : 0;
        return;
      case M.ListStart:
        if (isWs(c)) return;
        if (c === "[") this.#mode = M.ListItem;
        else if (c === "{") {
          this.#beginCall(M.Text);
          this.#callChar(c);
        } else {
          this.#mode = M.Text;
          this.#char(c);
        }
        return;
      case M.ListItem:
        if (isWs(c) || c === ",") return;
        if (c === "{") {
          this.#beginCall(M.ListItem);
          this.#callChar(c);
        } else if (c === "]") this.#toText();
        else this.#mode = M.Drop;
        return;
      case M.Calls:
        if (isWs(c) || c === ";") return;
        if (c === "{") {
          this.#beginCall(M.Calls);
          this.#callChar(c);
        } else {
          this.#toText();
          this.#char(c);
        }
        return;
      case M.Drop:
        return;
    }
  }

  #textChar(c: string, markers: boolean): void {
    if (markers && this.#marker) {
      if (c === this.#marker[this.#match]) {
        if (++this.#match === this.#marker.length) {
          this.#match = 0;
          this.#wsHold = "";
          this.#atStart = false;
          if (this.#f.name === "hermes") this.#beginCall(M.Close);
          else {
            if (this.#content) this.#events.push({ type: "content", text: this.#content });
            this.#content = "";
            this.#mode = this.#f.name === "mistral" ? M.ListStart : M.Calls;
          }
        }
        return;
      }
      if (this.#match > 0) {
        // Not the marker: the held characters are text; re-read them after the first (markers used here
        // have no border, so the only restart point is the current character).
        const held = this.#marker.slice(0, this.#match);
        this.#match = 0;
        this.#textChar(held[0], false);
        for (const h of held.slice(1)) this.#textChar(h, true);
        this.#textChar(c, true);
        return;
      }
    }
    if (isWs(c)) {
      if (!this.#dropLeading) this.#wsHold += c;
      return;
    }
    this.#dropLeading = false;
    this.#atStart = false;
    this.#content += this.#wsHold + c;
    this.#wsHold = "";
  }

  #beginCall(after: M): void {
    // Content before the call is reported before it.
    if (this.#content) this.#events.push({ type: "content", text: this.#content });
    this.#content = "";
    this.#mode = M.Call;
    this.#afterCall = after;
    this.#scanner = new CallScanner(
      this.#f.argsKey === "parameters" ? ["parameters", "arguments"] : undefined,
    );
    this.#started = false;
    this.#argsSent = false;
    this.#pendingArgs = "";
    this.#match = 0;
  }

  #callChar(c: string): void {
    const s = this.#scanner!;
    if (this.#tentative) this.#raw += c;
    const r = s.feed(c);
    if (this.#tentative && (r === "error" || s.firstKey !== null)) {
      if (r !== "error" && s.firstKey === "name") {
        this.#tentative = false;
        this.#atStart = false;
        this.#wsHold = "";
      } else {
        this.#abortTentative();
        return;
      }
    }
    if (!this.#started && s.name !== null) {
      this.#started = true;
      this.#index = this.#calls++;
      this.#events.push({ type: "start", index: this.#index, name: s.name });
      this.#args(this.#pendingArgs);
    }
    if (!this.#started) this.#pendingArgs += s.take();
    if (r === "done") {
      this.#endCall();
      this.#mode = this.#afterCall;
      this.#match = 0;
      if (this.#mode === M.Text) this.#dropLeading = true;
    } else if (r === "error") {
      this.#endCall();
      this.#match = 0;
      this.#mode = this.#f.name === "hermes" ? M.Skip : this.#f.name === "mistral" ? M.Drop : M.Text;
      if (this.#mode === M.Text) this.#dropLeading = true;
    }
  }

  /** Llama 3: the leading object is not a call; everything read for it is text. */
  #abortTentative(): void {
    const raw = this.#raw;
    this.#tentative = false;
    this.#atStart = false;
    this.#scanner = null;
    this.#mode = M.Text;
    for (const c of raw) this.#textChar(c, true);
  }

  #args(text: string): void {
    if (!text) return;
    this.#argsSent = true;
    const last = this.#events.at(-1);
    if (last && last.type === "args" && last.index === this.#index) last.text += text;
    else this.#events.push({ type: "args", index: this.#index, text });
  }

  #endCall(): void {
    const s = this.#scanner;
    if (!s) return;
    if (this.#started) {
      this.#args(s.take());
      if (!this.#argsSent) this.#args("{}");
      this.#events.push({ type: "end", index: this.#index });
    } else this.#events.push({ type: "invalid", text: this.#raw });
    this.#scanner = null;
    this.#started = false;
  }

  #toText(): void {
    this.#mode = M.Text;
    this.#match = 0;
    this.#dropLeading = true;
    this.#wsHold = "";
  }
}

/** Parses a whole reply: its content (tool markup removed) and its calls, in order. */
export function parseToolCalls(
  text: string,
  format: ToolCallFormat = HERMES,
): { content: string; calls: ParsedToolCall[]; invalid: number } {
  const p = new ToolCallStreamParser(format);
  return collect([...p.push(text), ...p.end()]);
}

/** Folds events into content and calls (what a client reassembling the stream gets). */
export function collect(events: ToolEvent[]): { content: string; calls: ParsedToolCall[]; invalid: number } {
  let content = "", invalid = 0;
  const calls: ParsedToolCall[] = [];
  for (const e of events) {
    if (e.type === "content") content += e.text;
    else if (e.type === "start") calls[e.index] = { name: e.name, arguments: "" };
    else if (e.type === "args") calls[e.index].arguments += e.text;
    else if (e.type === "invalid") invalid++;
  }
  return { content, calls, invalid };
}

/** An OpenAI-style call id: "call_" and 24 random letters and digits. */
export function newCallId(): string {
  return randomId("call_", 24);
}

/**
 * The chat engine's output-parser plug-in (ChatOutputParser): content deltas and tool-call deltas in
 * OpenAI's streaming shape (the first delta of a call has its id and name; later ones argument fragments).
 */
export class ToolOutputParser implements ChatOutputParser {
  finishReason?: ChatFinishReason;
  readonly #p: ToolCallStreamParser;
  readonly #ids: string[] = [];
  /** Invalid (dropped) blocks, for logs. */
  invalid = 0;

  constructor(format: ToolCallFormat = HERMES, readonly newId: () => string = newCallId) {
    this.#p = new ToolCallStreamParser(format);
  }

  push(text: string): ChatDelta[] {
    return this.#deltas(this.#p.push(text));
  }

  end(): ChatDelta[] {
    const out = this.#deltas(this.#p.end());
    if (this.#p.calls > 0) this.finishReason = "tool_calls";
    return out;
  }

  #deltas(events: ToolEvent[]): ChatDelta[] {
    const out: ChatDelta[] = [];
    for (const e of events) {
      const last = out.at(-1);
      if (e.type === "content") {
        if (last && last.content !== undefined && !last.toolCalls) last.content += e.text;
        else out.push({ content: e.text });
      } else if (e.type === "start") {
        const id = this.#ids[e.index] = this.newId();
        out.push({ toolCalls: [{ index: e.index, id, name: e.name, arguments: "" }] });
      } else if (e.type === "args") {
        const call: ChatToolCallDelta | undefined = last?.toolCalls?.at(-1);
        if (call && call.index === e.index) call.arguments = (call.arguments ?? "") + e.text;
        else out.push({ toolCalls: [{ index: e.index, arguments: e.text }] });
      } else if (e.type === "invalid") this.invalid++;
    }
    return out;
  }
}
