// Owns streaming a family's reader (family.ts): the chat engine's output parser that re-reads the whole reply
// after each piece and sends on what grew, as OpenAI's deltas (reasoning, content, and per call a first delta
// with index, id "call_...", name and arguments "", then argument fragments). Leading whitespace is trimmed
// and trailing whitespace waits until more text shows it is not the end (llama.cpp's server trims replies the
// same way). A re-read that would take back text already sent (a reader bug) sends nothing more of that part
// rather than something wrong; the final read then still has the whole reply.
import type { ChatDelta, ChatFinishReason, ChatOutputParser } from "../../engines/types.ts";
import { newCallId } from "../tools/mod.ts";
import { type Family, NO_SCHEMAS, type ParseContext } from "./family.ts";

/** What of `now` follows what was sent, or "" when `now` does not extend it. */
function grown(sent: string, now: string): string {
  return now.length > sent.length && now.startsWith(sent) ? now.slice(sent.length) : "";
}

function shown(text: string, partial: boolean): string {
  const t = text.trimStart();
  return partial ? t.trimEnd() : t.trimEnd();
}

export class FamilyOutputParser implements ChatOutputParser {
  finishReason?: ChatFinishReason;
  #text = "";
  #reasoning = "";
  #content = "";
  readonly #calls: { name: string; args: string; id: string }[] = [];

  constructor(
    readonly family: Family,
    readonly ctx: ParseContext = NO_SCHEMAS,
    readonly newId: () => string = newCallId,
  ) {}

  push(text: string): ChatDelta[] {
    if (!text) return [];
    this.#text += text;
    return this.#read(true);
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
    const r = this.family.parse(this.#text, partial, this.ctx);
    const out: ChatDelta[] = [];
    const reasoning = grown(this.#reasoning, shown(r.reasoning, partial));
    if (reasoning) out.push({ reasoning }), this.#reasoning += reasoning;
    const content = grown(this.#content, shown(r.content, partial));
    if (content) out.push({ content }), this.#content += content;
    for (let i = 0; i < r.calls.length; i++) {
      const c = r.calls[i];
      let sent = this.#calls[i];
      const args = shown(c.arguments, partial);
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
    return out;
  }
}
