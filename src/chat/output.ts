// Owns the per-choice output parser a chat request plugs into the engine (issue 7): the tool-call parser when
// calls are read from the output (formats/, tools/), limited to the calls the request allows
// (parallel_tool_calls false: the first one), and the finish reason: "tool_calls" when a call was kept,
// "length" when the constraint had to close the output early. Under tool_choice none (maxCalls 0) the
// call-opening tokens are masked; a call the model writes all the same comes back as text,
// `{"name": ..., "arguments": ...}`, never dropped (issue 30: a reply must not vanish).
import type { ChatDelta, ChatFinishReason, ChatOutputParser } from "../engines/types.ts";

export interface ChoiceOutputOptions {
  /** Calls kept (in order); later ones are dropped whole. Infinity: all. */
  maxCalls: number;
  /** Read at the end: the constraint closed the document early (finish_reason "length"). */
  truncated?: () => boolean;
}

export class ChoiceOutput implements ChatOutputParser {
  finishReason?: ChatFinishReason;
  #kept = 0;
  /** Calls the output held beyond maxCalls (dropped; for logs). */
  dropped = 0;
  readonly #seen = new Set<number>();

  /** `tools`: the tool-call parser, or null when the output is all content. */
  constructor(readonly tools: ChatOutputParser | null, readonly opts: ChoiceOutputOptions) {}

  push(text: string): ChatDelta[] {
    if (!this.tools) return text ? [{ content: text }] : [];
    return this.#filter(this.tools.push(text));
  }

  end(): ChatDelta[] {
    const out = this.tools ? this.#filter(this.tools.end()) : [];
    if (this.#asText) out.push({ content: "}" }), this.#asText = false;
    if (this.opts.truncated?.()) this.finishReason = "length";
    else if (this.#kept > 0) this.finishReason = "tool_calls";
    return out;
  }

  /** tool_choice none: a call as text; its object is open until the next call or the end. */
  #asText = false;

  #textOf(d: ChatDelta): string {
    let t = "";
    for (const c of d.toolCalls ?? []) {
      if (c.name !== undefined) {
        t += `${this.#asText ? "}\n" : ""}{"name": ${JSON.stringify(c.name)}, "arguments": `;
        this.#asText = true;
      }
      t += c.arguments ?? "";
    }
    return t;
  }

  #filter(deltas: ChatDelta[]): ChatDelta[] {
    const out: ChatDelta[] = [];
    if (this.opts.maxCalls === 0) {
      for (const d of deltas) {
        const text = (d.content ?? "") + this.#textOf(d);
        if (d.reasoning !== undefined) out.push({ reasoning: d.reasoning });
        if (text) out.push({ content: text });
      }
      return out;
    }
    for (const d of deltas) {
      if (!d.toolCalls) {
        out.push(d);
        continue;
      }
      const calls = d.toolCalls.filter((c) => {
        if (!this.#seen.has(c.index)) {
          this.#seen.add(c.index);
          if (c.index < this.opts.maxCalls) this.#kept++;
          else this.dropped++;
        }
        return c.index < this.opts.maxCalls;
      });
      if (calls.length || d.content !== undefined) {
        out.push(calls.length ? { ...d, toolCalls: calls } : { content: d.content });
      }
    }
    return out;
  }
}
