// Owns the families that write JSON call objects after a marker of their own: Phi-4-mini
// (`<|tool_call|>[{"name": ..., "arguments": ...}]<|/tool_call|>`), Granite 3.x (`<|tool_call|>[...]` to the end),
// Command R/R+ (`Action: ```json\n[{"tool_name": ..., "parameters": ...}]\n````), Command A/R7B
// (`<|START_THINKING|>...<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": ...,
// "parameters": ...}]<|END_ACTION|>`, answers in `<|START_RESPONSE|>...<|END_RESPONSE|>`) and the generic
// fallback for templates with no call syntax (the server asks for `{"tool_calls": [{"name": ...,
// "arguments": {...}}]}` as the whole reply, as llama.cpp's generic format does).
import { type Family, joinText, jsonOrText, type ReadOutput, settled } from "./family.ts";
import { type JsonCallKeys, readJsonCalls } from "./json_calls.ts";

/** Calls as a JSON list after `open` (up to `close`, or to the end when close is ""). */
function markedList(
  name: string,
  open: string,
  close: string,
  keys: JsonCallKeys = {},
  markers: string[] = [],
): Family {
  const parse = (text: string, partial: boolean): ReadOutput => {
    const none = (content: string): ReadOutput => ({ reasoning: "", content, calls: [] });
    const at = text.indexOf(open);
    if (at < 0) return none(settled(text, partial, [open]));
    const body = text.slice(at + open.length);
    const r = readJsonCalls(body, keys);
    if (!r.ok || (!partial && (r.calls.length === 0 || r.end < 0))) return none(text);
    let after = r.end < 0 ? "" : body.slice(r.end);
    if (close) {
      const t = after.trimStart();
      if (t.startsWith(close)) after = t.slice(close.length);
      else if (partial && close.startsWith(t)) after = "";
    }
    return {
      reasoning: "",
      content: joinText(text.slice(0, at), settled(after, partial, [open])),
      calls: r.calls,
    };
  };
  const writeCalls = (calls: readonly { name: string; arguments: string }[]) =>
    `${open}${
      JSON.stringify(calls.map((c) => ({ name: c.name, arguments: jsonOrText(c.arguments) })))
    }${close}`;
  return { name, markers, callOpeners: [open], parse, writeCalls };
}

export const PHI4 = markedList("phi4", "<|tool_call|>", "<|/tool_call|>", {}, [
  "<|tool_call|>",
  "<|/tool_call|>",
]);
export const GRANITE = markedList("granite", "<|tool_call|>", "", {}, ["<|tool_call|>"]);

const COMMAND_KEYS: JsonCallKeys = { names: ["tool_name", "name"], args: ["parameters", "arguments"] };

const commandR = markedList("command_r", "Action:", "```", COMMAND_KEYS);
export const COMMAND_R: Family = {
  ...commandR,
  parse(text, partial, ctx) {
    // `Action: ```json\n[...]\n```` : the fence is part of the section (held while it is still arriving).
    const at = text.indexOf("Action:");
    if (at >= 0) {
      const rest = text.slice(at + "Action:".length);
      if (partial && "```json".startsWith(rest.trim())) {
        return { reasoning: "", content: text.slice(0, at), calls: [] };
      }
      const fence = /^\s*```(?:json)?/.exec(rest);
      if (fence) text = text.slice(0, at) + "Action:" + rest.slice(fence[0].length);
    }
    return commandR.parse(text, partial, ctx);
  },
};

const TAGS = {
  think: ["<|START_THINKING|>", "<|END_THINKING|>"],
  action: ["<|START_ACTION|>", "<|END_ACTION|>"],
  response: ["<|START_RESPONSE|>", "<|END_RESPONSE|>"],
} as const;
const COMMAND_A_MARKERS = Object.values(TAGS).flat();

/** Command A: thinking, action and response blocks, each read by its tags (text outside them is content). */
export const COMMAND_A: Family = {
  name: "command_a",
  markers: COMMAND_A_MARKERS,
  callOpeners: [TAGS.action[0]],
  ownsReasoning: true,
  parse(text, partial) {
    const out: ReadOutput = { reasoning: "", content: "", calls: [] };
    let s = text;
    for (;;) {
      let first = -1, kind: keyof typeof TAGS | null = null;
      for (const k of Object.keys(TAGS) as (keyof typeof TAGS)[]) {
        const i = s.indexOf(TAGS[k][0]);
        if (i >= 0 && (first < 0 || i < first)) first = i, kind = k;
      }
      if (!kind) {
        out.content = joinText(out.content, settled(s, partial, COMMAND_A_MARKERS));
        return out;
      }
      out.content = joinText(out.content, s.slice(0, first));
      const [open, close] = TAGS[kind];
      const rest = s.slice(first + open.length);
      const end = rest.indexOf(close);
      const inner = end < 0 ? settled(rest, partial, COMMAND_A_MARKERS) : rest.slice(0, end);
      if (kind === "think") out.reasoning = joinText(out.reasoning, inner);
      else if (kind === "response") out.content = joinText(out.content, inner);
      else {
        const r = readJsonCalls(inner, COMMAND_KEYS);
        if (!r.ok || (end >= 0 && r.calls.length === 0)) {
          if (end >= 0 || !partial) out.content = joinText(out.content, open + inner);
        } else out.calls.push(...r.calls);
      }
      if (end < 0) return out;
      s = rest.slice(end + close.length);
    }
  },
};

/** The generic fallback: `{"tool_calls": [...]}` (or `{"tool_call": {...}}`) as the whole reply. */
export const GENERIC: Family = {
  name: "generic",
  markers: [],
  callOpeners: [],
  parse(text, partial) {
    const none = (content: string): ReadOutput => ({ reasoning: "", content, calls: [] });
    const m = /^\s*\{\s*"tool_calls?"\s*:\s*/.exec(text);
    if (!m) {
      const lead = text.trimStart();
      // Held while the reply may still open such an object.
      if (partial && lead && '{"tool_calls"'.startsWith(lead.replace(/\s+/g, ""))) return none("");
      return none(text);
    }
    const r = readJsonCalls(text.slice(m[0].length));
    if (!r.ok || (!partial && (r.calls.length === 0 || r.end < 0))) return none(text);
    return { reasoning: "", content: "", calls: r.calls };
  },
  writeCalls: (calls) =>
    JSON.stringify({ tool_calls: calls.map((c) => ({ name: c.name, arguments: jsonOrText(c.arguments) })) }),
};
