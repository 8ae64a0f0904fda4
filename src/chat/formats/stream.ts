// Owns streaming a family's reader (family.ts): the chat engine's output parser that re-reads the whole reply
// after each piece and sends on what grew, as OpenAI's deltas (reasoning, content, and per call a first delta
// with index, id "call_...", name and arguments "", then argument fragments). Leading whitespace is trimmed
// and trailing whitespace waits until more text shows it is not the end (llama.cpp's server trims replies the
// same way). A re-read that would take back text already sent (a reader bug) sends nothing more of that part
// rather than something wrong; the final read then still has the whole reply. Where the reader says the
// reply ends inside a field that plain text only extends (`tail`), a piece without the family's trigger
// characters extends that field without a re-read: each token then costs its own length, not the reply's.
import type { ChatDelta, ChatFinishReason, ChatOutputParser } from "../../engines/types.ts";
import { newCallId } from "../tools/mod.ts";
import { type Family, NO_SCHEMAS, type ParseContext, type ReadOutput } from "./family.ts";

/** What of `now` follows what was sent, or "" when `now` does not extend it. */
function grown(sent: string, now: string): string {
  return now.length > sent.length && now.startsWith(sent) ? now.slice(sent.length) : "";
}

/** A field as sent: trimmed both ends (trailing whitespace waits until text follows it, or for good). */
function shown(text: string): string {
  return text.trim();
}

export class FamilyOutputParser implements ChatOutputParser {
  finishReason?: ChatFinishReason;
  #text = "";
  #reasoning = "";
  #content = "";
  /** After a partial read ending inside a field that plain text extends: that field, its unsent whitespace. */
  #tail: { field: "reasoning" | "content" | "args"; ws: string } | null = null;
  readonly #calls: { name: string; args: string; id: string }[] = [];

  constructor(
    readonly family: Family,
    readonly ctx: ParseContext = NO_SCHEMAS,
    readonly newId: () => string = newCallId,
  ) {}

  push(text: string): ChatDelta[] {
    if (!text) return [];
    this.#text += text;
    const tail = this.#tail;
    const triggers = this.family.triggers;
    if (tail && triggers && ![...triggers].some((c) => text.includes(c))) return this.#extend(tail, text);
    return this.#read(true);
  }

  /**
   * Plain text at the end of a growing field: what it adds is sent without reading the reply again, and
   * without touching the field's whole text (trailing whitespace waits in `ws`, as a re-read would hold it).
   */
  #extend(tail: { field: "reasoning" | "content" | "args"; ws: string }, text: string): ChatDelta[] {
    const all = tail.ws + text;
    const add = all.trimEnd();
    tail.ws = all.slice(add.length);
    if (!add) return [];
    if (tail.field === "reasoning") return this.#reasoning += add, [{ reasoning: add }];
    if (tail.field === "content") return this.#content += add, [{ content: add }];
    const i = this.#calls.length - 1;
    this.#calls[i].args += add;
    return [{ toolCalls: [{ index: i, arguments: add }] }];
  }

  end(): ChatDelta[] {
    const out = this.#read(false);
    if (this.#calls.length > 0) this.finishReason = "tool_calls";
    return out;
  }

  /** The reply's calls so far (tests). */
  get calls(): number {
    return this.#calls.length;
  }

  #read(partial: boolean): ChatDelta[] {
    return this.#emit(this.family.parse(this.#text, partial, this.ctx), partial);
  }

  #emit(r: ReadOutput, partial: boolean): ChatDelta[] {
    const out: ChatDelta[] = [];
    const reasoning = grown(this.#reasoning, shown(r.reasoning));
    if (reasoning) out.push({ reasoning }), this.#reasoning += reasoning;
    const content = grown(this.#content, shown(r.content));
    if (content) out.push({ content }), this.#content += content;
    for (let i = 0; i < r.calls.length; i++) {
      const c = r.calls[i];
      let sent = this.#calls[i];
      const args = shown(c.arguments);
      if (!sent) {
        if (i !== this.#calls.length) break;
        sent = { name: c.name, args: "", id: this.newId() };
        this.#calls.push(sent);
        out.push({ toolCalls: [{ index: i, id: sent.id, name: c.name, arguments: "" }] });
      }
      const more = grown(sent.args, args);
      if (more) {
        sent.args += more;
        const last = out.at(-1)?.toolCalls?.at(-1);
        if (last && last.index === i) last.arguments = (last.arguments ?? "") + more;
        else out.push({ toolCalls: [{ index: i, arguments: more }] });
      }
    }
    this.#tail = null;
    if (partial && r.tail) {
      // The field's raw text, of which everything but its trailing whitespace has been sent.
      const raw = r.tail === "args" ? r.calls.at(-1)?.arguments : r[r.tail];
      const sent = r.tail === "args"
        ? this.#calls.at(-1)?.args
        : r.tail === "reasoning"
        ? this.#reasoning
        : this.#content;
      if (
        raw !== undefined && sent !== undefined && r.calls.length === this.#calls.length &&
        raw.trim() !== "" && raw.trimEnd().endsWith(sent.slice(-64))
      ) {
        this.#tail = { field: r.tail, ws: raw.slice(raw.trimEnd().length) };
      }
    }
    return out;
  }
}
