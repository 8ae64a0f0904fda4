// Owns thinking blocks (issue 14): a model whose template uses `<think>...</think>` (Qwen3, DeepSeek-R1
// distills, SmolLM3) writes its reasoning first; the splitter sends that text to `reasoning` and the rest to
// the answer, as it streams, so no tag or thought ever reaches `content`. Whitespace around the block is
// trimmed (the answer's leading newlines, the reasoning's own), as llama.cpp's server does. The gate lets a
// constraint (json_schema, forced tools) apply to the answer only: it is open once the block is over.
import type { ChatLogitsProcessor } from "../engines/types.ts";

export const THINK_OPEN = "<think>";
export const THINK_CLOSE = "</think>";
const DEFAULT_TAGS = { open: THINK_OPEN, close: THINK_CLOSE };

/** Whether a chat template writes or strips thinking blocks. */
export function templateThinks(template: string | null): boolean {
  return template !== null && (template.includes(THINK_OPEN) || template.includes(THINK_CLOSE));
}

export type ThinkPhase = "start" | "thinking" | "answer";

export interface Split {
  reasoning: string;
  content: string;
}

/** Longest suffix of `text` that is a proper prefix of `tag` (it may become the tag). */
function partialTag(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (tag.startsWith(text.slice(text.length - n))) return n;
  }
  return 0;
}

export class ReasoningSplitter {
  phase: ThinkPhase;
  /** Text held back: a possible tag, or whitespace that may end the reasoning. */
  #held = "";
  /** Reasoning text has been emitted (its leading whitespace is trimmed until then). */
  #started = false;
  /** The answer has begun (its leading whitespace is trimmed until then). */
  #answering = false;
  /** A block was opened (so the answer's leading whitespace belongs to the block's end). */
  #thought = false;

  /**
   * `open`: the prompt already opened the block (a template that ends its generation prompt in `<think>`).
   * `tags`: the family's block tags (Magistral writes `[THINK]...[/THINK]`).
   */
  constructor(open: boolean, readonly tags: { open: string; close: string } = DEFAULT_TAGS) {
    this.phase = open ? "thinking" : "start";
    this.#thought = open;
  }

  push(text: string): Split {
    const out: Split = { reasoning: "", content: "" };
    let rest = this.#held + text;
    this.#held = "";
    while (rest) {
      if (this.phase === "start") {
        const lead = rest.trimStart();
        if (lead.startsWith(this.tags.open)) {
          this.phase = "thinking";
          this.#thought = true;
          rest = lead.slice(this.tags.open.length);
          continue;
        }
        if (this.tags.open.startsWith(lead)) {
          this.#held = rest; // whitespace, or a tag still arriving
          return out;
        }
        this.phase = "answer";
        this.#answering = true; // no block: the text is the model's own, untouched
      }
      if (this.phase === "thinking") {
        const end = rest.indexOf(this.tags.close);
        const body = end < 0 ? rest : rest.slice(0, end);
        const keep = end < 0 ? partialTag(body, this.tags.close) : 0;
        let emit = body.slice(0, body.length - keep);
        if (!this.#started) emit = emit.trimStart();
        const trimmed = emit.trimEnd();
        // Trailing whitespace waits: it is dropped if the block ends right after it.
        if (end < 0) this.#held = emit.slice(trimmed.length) + body.slice(body.length - keep);
        if (trimmed) {
          out.reasoning += trimmed;
          this.#started = true;
        }
        if (end < 0) return out;
        this.phase = "answer";
        rest = rest.slice(end + this.tags.close.length);
        continue;
      }
      if (!this.#answering) {
        rest = rest.trimStart();
        if (!rest) return out;
        this.#answering = true;
      }
      out.content += rest;
      rest = "";
    }
    return out;
  }

  /** The end of the output: what was held goes where it was heading. */
  end(): Split {
    const held = this.#held;
    this.#held = "";
    if (this.phase === "start") return { reasoning: "", content: held };
    if (this.phase === "thinking") {
      const text = this.#started ? held.trimEnd() : held.trim();
      return { reasoning: text, content: "" };
    }
    return { reasoning: "", content: "" };
  }

  /** Whether a thinking block was seen (for counting its tokens). */
  get thought(): boolean {
    return this.#thought;
  }
}

/** What the gate needs to know of the constraint it wraps. */
export interface GatedConstraint extends ChatLogitsProcessor {
  /** A token spent outside the constrained document (thinking): it counts against the budget. */
  skip(): void;
}

/**
 * A constraint applied to the answer only. While thinking, tokens pass unmasked; before the output shows
 * whether it thinks, the answer's mask applies but the block's opening token stays allowed (and a newline
 * before it: GLM writes "\n<think>"), so a model that skips its block is constrained from its first token.
 * Tokens spent before the answer are skipped by the constraint; the splitter drops leading whitespace of
 * the answer, so a newline let through never reaches the constrained document.
 */
export class ThinkingGate implements ChatLogitsProcessor {
  #mode: "open" | "closed" | "either" = "closed";
  readonly #passIds: readonly number[];
  readonly #saved: number[];

  constructor(
    readonly inner: GatedConstraint,
    readonly splitter: ReasoningSplitter,
    openId: number | undefined | readonly number[],
  ) {
    this.#passIds = openId === undefined ? [] : typeof openId === "number" ? [openId] : openId;
    this.#saved = this.#passIds.map(() => 0);
  }

  process(logits: Float32Array): "end" | void {
    const phase = this.splitter.phase;
    if (phase === "thinking") {
      this.#mode = "closed";
      return;
    }
    if (phase === "answer") {
      this.#mode = "open";
      return this.inner.process(logits);
    }
    this.#mode = "either";
    if (this.#passIds.length === 0) return this.inner.process(logits);
    this.#passIds.forEach((id, i) => this.#saved[i] = logits[id]);
    this.inner.process(logits);
    this.#passIds.forEach((id, i) => logits[id] = this.#saved[i]);
  }

  accept(tokenId: number): void {
    if (this.#mode === "open" || (this.#mode === "either" && !this.#passIds.includes(tokenId))) {
      this.inner.accept(tokenId);
    } else this.inner.skip();
  }
}
