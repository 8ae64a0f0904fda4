// Owns a Response's `output` as a generation produces it: the choice's deltas become output items (a
// `reasoning` item for a thinking block, a `message` with one `output_text` part, a `function_call` per tool
// call) and, for streaming, the typed events OpenAI sends for each (output_item.added, content_part.added,
// *.delta, *.done, output_item.done) with their output_index, item_id and content_index. An item closes when
// the next one starts or the generation ends; a reply cut by max_output_tokens leaves its last item
// `incomplete`. When the request asks for a reasoning summary, the reasoning item also carries the block's
// text as its one `summary_text` part (streamed as reasoning_summary_* events): a local model has no separate
// summarizer, so the "summary" is the reasoning itself, verbatim, and clients that only read summaries (the
// Vercel AI SDK's and the Agents SDK's Responses providers) see the thinking.
import type { ChatDelta, ChatTokenLogprob } from "../engines/types.ts";
import { randomId } from "../ids.ts";

export type OutputItem = Record<string, unknown> & { id: string; type: string };
/** A stream event before its sequence_number is stamped. */
export type OutputEvent = Record<string, unknown> & { type: string };

function wireLogprobs(lps: ChatTokenLogprob[] | null) {
  return (lps ?? []).map((lp) => ({
    token: lp.token,
    logprob: lp.logprob,
    bytes: lp.bytes,
    top_logprobs: lp.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
}

function summaryPart(text: string) {
  return { type: "summary_text", text };
}

interface Open {
  index: number;
  item: OutputItem;
  kind: "reasoning" | "message" | "function_call";
  text: string;
  logprobs: ReturnType<typeof wireLogprobs>;
}

export class ResponseOutput {
  readonly items: OutputItem[] = [];
  /** Whether reasoning items also carry the text as their summary (`reasoning.summary` was set). */
  readonly #summary: boolean;
  #open: Open | null = null;
  /** Whitespace content before any message: it joins the message if one follows, else it is dropped. */
  #pendingWs = "";
  /** Tool-call index (the parser's) -> the open function_call. */
  readonly #calls = new Map<number, Open>();

  constructor(opts: { summary?: boolean } = {}) {
    this.#summary = opts.summary === true;
  }

  /** The events one delta makes; the items are updated as they go. */
  push(delta: ChatDelta, logprobs: ChatTokenLogprob[] | null): OutputEvent[] {
    const out: OutputEvent[] = [];
    if (delta.reasoning) this.#text("reasoning", delta.reasoning, null, out);
    const content = delta.content ?? "";
    if (this.#open?.kind !== "message" && content && !content.trim() && !logprobs?.length) {
      this.#pendingWs += content;
    } else if (content || (delta.content !== undefined && logprobs?.length)) {
      this.#text("message", this.#pendingWs + content, logprobs, out);
      this.#pendingWs = "";
    }
    for (const c of delta.toolCalls ?? []) {
      let call = this.#calls.get(c.index);
      if (!call) {
        this.#close("completed", out);
        const item: OutputItem = {
          id: randomId("fc_", 24),
          type: "function_call",
          status: "in_progress",
          arguments: "",
          call_id: c.id ?? randomId("call_", 24),
          name: c.name ?? "",
        };
        call = this.#start("function_call", item, out);
        this.#calls.set(c.index, call);
      }
      if (c.arguments) {
        call.text += c.arguments;
        out.push({
          type: "response.function_call_arguments.delta",
          item_id: call.item.id,
          output_index: call.index,
          delta: c.arguments,
        });
      }
    }
    return out;
  }

  /** Closes the last open item: `incomplete` when the generation was cut short. */
  end(status: "completed" | "incomplete"): OutputEvent[] {
    const out: OutputEvent[] = [];
    // A reply of whitespace only is still a message.
    if (this.#pendingWs && this.items.length === 0) this.#text("message", this.#pendingWs, null, out);
    this.#close(status, out);
    return out;
  }

  /** The concatenated text of the message items (the SDKs' `output_text`). */
  get text(): string {
    return this.items.filter((i) => i.type === "message").map((i) =>
      (i.content as { text: string }[]).map((p) => p.text).join("")
    ).join("");
  }

  #text(kind: "reasoning" | "message", text: string, lps: ChatTokenLogprob[] | null, out: OutputEvent[]) {
    let cur = this.#open;
    if (cur?.kind !== kind) {
      this.#close("completed", out);
      const item: OutputItem = kind === "reasoning"
        ? { id: randomId("rs_", 24), type: "reasoning", summary: [], content: [], status: "in_progress" }
        : {
          id: randomId("msg_", 24),
          type: "message",
          status: "in_progress",
          content: [],
          role: "assistant",
        };
      cur = this.#start(kind, item, out);
      out.push({
        type: "response.content_part.added",
        item_id: item.id,
        output_index: cur.index,
        content_index: 0,
        part: kind === "reasoning"
          ? { type: "reasoning_text", text: "" }
          : { type: "output_text", annotations: [], logprobs: [], text: "" },
      });
      if (kind === "reasoning" && this.#summary) {
        out.push({
          ...this.#summaryRef(cur),
          type: "response.reasoning_summary_part.added",
          part: summaryPart(""),
        });
      }
    }
    cur.text += text;
    const wire = wireLogprobs(lps);
    cur.logprobs.push(...wire);
    out.push(
      kind === "reasoning"
        ? {
          type: "response.reasoning_text.delta",
          item_id: cur.item.id,
          output_index: cur.index,
          content_index: 0,
          delta: text,
        }
        : {
          type: "response.output_text.delta",
          item_id: cur.item.id,
          output_index: cur.index,
          content_index: 0,
          delta: text,
          logprobs: wire,
        },
    );
    if (kind === "reasoning" && this.#summary) {
      out.push({ ...this.#summaryRef(cur), type: "response.reasoning_summary_text.delta", delta: text });
    }
  }

  /** The fields every reasoning_summary_* event names its part by. */
  #summaryRef(cur: Open) {
    return { item_id: cur.item.id, output_index: cur.index, summary_index: 0 };
  }

  #start(kind: Open["kind"], item: OutputItem, out: OutputEvent[]): Open {
    const open: Open = { index: this.items.length, item, kind, text: "", logprobs: [] };
    this.items.push(item);
    this.#open = open;
    out.push({ type: "response.output_item.added", output_index: open.index, item: structuredClone(item) });
    return open;
  }

  #close(status: "completed" | "incomplete", out: OutputEvent[]) {
    const cur = this.#open;
    if (!cur) return;
    this.#open = null;
    const { item, index } = cur;
    if (cur.kind === "function_call") {
      item.arguments = cur.text;
      out.push({
        type: "response.function_call_arguments.done",
        item_id: item.id,
        output_index: index,
        name: item.name,
        arguments: cur.text,
      });
    } else {
      const part = cur.kind === "reasoning"
        ? { type: "reasoning_text", text: cur.text }
        : { type: "output_text", annotations: [], logprobs: cur.logprobs, text: cur.text };
      out.push(
        cur.kind === "reasoning"
          ? {
            type: "response.reasoning_text.done",
            item_id: item.id,
            output_index: index,
            content_index: 0,
            text: cur.text,
          }
          : {
            type: "response.output_text.done",
            item_id: item.id,
            output_index: index,
            content_index: 0,
            text: cur.text,
            logprobs: cur.logprobs,
          },
      );
      if (cur.kind === "reasoning" && this.#summary) {
        const ref = this.#summaryRef(cur);
        out.push({ ...ref, type: "response.reasoning_summary_text.done", text: cur.text });
        out.push({ ...ref, type: "response.reasoning_summary_part.done", part: summaryPart(cur.text) });
        item.summary = [summaryPart(cur.text)];
      }
      out.push({
        type: "response.content_part.done",
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part,
      });
      item.content = [part];
    }
    item.status = status;
    out.push({ type: "response.output_item.done", output_index: index, item: structuredClone(item) });
  }
}
