// Owns a Messages reply's `content` as a generation produces it: the choice's deltas become content blocks
// (a `thinking` block for the model's reasoning, `text`, a `tool_use` per tool call with its parsed `input`)
// and, for streaming, the events Anthropic sends for each: content_block_start, content_block_delta
// (text_delta, thinking_delta, input_json_delta with partial_json, signature_delta) and content_block_stop,
// each with the block's index. A block closes when the next one starts or the generation ends. A thinking
// block's `signature` is a digest of its text: Anthropic signs thinking so it can check blocks sent back;
// this server never needs to (it leaves past thinking out of the prompt), so the digest only gives clients
// the non-empty field they expect. With `display: "omitted"` thinking blocks carry the signature and no text.
import { createHash } from "node:crypto";
import type { ChatDelta } from "../engines/types.ts";
import { randomId } from "../ids.ts";

export type ContentBlockOut = Record<string, unknown> & { type: string };
/** A stream event: its `type` is also its SSE event name. */
export type MessageEvent = Record<string, unknown> & { type: string };

interface Open {
  index: number;
  block: ContentBlockOut;
  text: string;
}

/** Anthropic-style ids: a prefix, `01`, then 22 base62 characters. */
export function anthropicId(prefix: "msg_" | "toolu_"): string {
  return randomId(`${prefix}01`, 22);
}

function signatureOf(text: string): string {
  return createHash("sha256").update(`thinking:${text}`).digest("base64");
}

export class MessageContent {
  readonly blocks: ContentBlockOut[] = [];
  readonly #omitThinking: boolean;
  #open: Open | null = null;
  /** Whitespace before any text block: it joins the text if one follows, else (tool calls only) dropped. */
  #pendingWs = "";
  /** Tool-call index (the parser's) -> its open tool_use block. */
  readonly #calls = new Map<number, Open>();

  constructor(opts: { omitThinking?: boolean } = {}) {
    this.#omitThinking = opts.omitThinking === true;
  }

  /** The events one delta makes; the blocks are updated as they go. */
  push(delta: ChatDelta): MessageEvent[] {
    const out: MessageEvent[] = [];
    if (delta.reasoning) this.#text("thinking", delta.reasoning, out);
    const content = delta.content ?? "";
    if (this.#open?.block.type !== "text" && content && !content.trim()) this.#pendingWs += content;
    else if (content) {
      this.#text("text", this.#pendingWs + content, out);
      this.#pendingWs = "";
    }
    for (const c of delta.toolCalls ?? []) {
      let call = this.#calls.get(c.index);
      if (!call) {
        call = this.#start(
          { type: "tool_use", id: anthropicId("toolu_"), name: c.name ?? "", input: {} },
          out,
        );
        this.#calls.set(c.index, call);
      }
      if (c.arguments) {
        call.text += c.arguments;
        out.push(this.#delta(call, { type: "input_json_delta", partial_json: c.arguments }));
      }
    }
    return out;
  }

  /** Closes the last open block. */
  end(): MessageEvent[] {
    const out: MessageEvent[] = [];
    // A reply of whitespace only is still text.
    if (this.#pendingWs && this.blocks.length === 0) this.#text("text", this.#pendingWs, out);
    this.#pendingWs = "";
    this.#close(out);
    return out;
  }

  #text(kind: "thinking" | "text", text: string, out: MessageEvent[]) {
    let cur = this.#open;
    if (cur?.block.type !== kind) {
      cur = this.#start(
        kind === "thinking" ? { type: "thinking", thinking: "", signature: "" } : { type: "text", text: "" },
        out,
      );
    }
    cur.text += text;
    if (kind === "text") out.push(this.#delta(cur, { type: "text_delta", text }));
    else if (!this.#omitThinking) out.push(this.#delta(cur, { type: "thinking_delta", thinking: text }));
  }

  #delta(cur: Open, delta: Record<string, unknown>): MessageEvent {
    return { type: "content_block_delta", index: cur.index, delta };
  }

  #start(block: ContentBlockOut, out: MessageEvent[]): Open {
    this.#close(out);
    const open: Open = { index: this.blocks.length, block, text: "" };
    this.blocks.push(block);
    this.#open = open;
    out.push({ type: "content_block_start", index: open.index, content_block: structuredClone(block) });
    return open;
  }

  #close(out: MessageEvent[]) {
    const cur = this.#open;
    if (!cur) return;
    this.#open = null;
    const { block } = cur;
    if (block.type === "thinking") {
      const signature = signatureOf(cur.text);
      block.thinking = this.#omitThinking ? "" : cur.text;
      block.signature = signature;
      out.push(this.#delta(cur, { type: "signature_delta", signature }));
    } else if (block.type === "text") block.text = cur.text;
    else block.input = parseInput(cur.text);
    out.push({ type: "content_block_stop", index: cur.index });
  }
}

/** A call's arguments as an object (the parser and constraints give JSON objects; anything else is kept). */
function parseInput(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : { value: v };
  } catch {
    return { arguments: text };
  }
}
