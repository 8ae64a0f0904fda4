// Owns gpt-oss's Harmony format: a reply is messages, each `[<|start|>assistant]<|channel|>CHANNEL
// [to=RECIPIENT] [<|constrain|>json]<|message|>BODY` ended by `<|end|>`, `<|call|>` or `<|return|>` (the last
// two end the generation). The recipient may also stand before the channel (`<|start|>assistant
// to=functions.x<|channel|>commentary json<|message|>`). Channel `analysis` is reasoning, `final` the answer,
// `commentary` with a recipient `functions.NAME` a call whose body is its JSON arguments (a recipient of
// another namespace keeps its full name), `commentary` without one a preamble shown as content. Text the
// model writes outside this framing is content as written.
import { argumentsText, type Family, joinText, type ReadCall, type ReadOutput, settled } from "./family.ts";

const START = "<|start|>";
const CHANNEL = "<|channel|>";
const MESSAGE = "<|message|>";
const ENDS = ["<|end|>", "<|call|>", "<|return|>"];
const MARKERS = [START, CHANNEL, MESSAGE, "<|constrain|>", ...ENDS];

function parse(text: string, partial: boolean): ReadOutput {
  const out: ReadOutput = { reasoning: "", content: "", calls: [] };
  let s = text;
  let first = true;
  while (s.trim()) {
    const lead = s.trimStart();
    if (first && !lead.startsWith(CHANNEL) && !lead.startsWith(START) && !lead.startsWith(" to=")) {
      // Not Harmony framing: the text is the answer (held while it may still become a marker).
      if (partial && (CHANNEL.startsWith(lead) || START.startsWith(lead))) return out;
      out.content = settled(s, partial, MARKERS);
      if (partial && out.content === s) out.tail = "content";
      return out;
    }
    first = false;
    const m = s.indexOf(MESSAGE);
    if (m < 0) {
      if (!partial) out.content = joinText(out.content, s);
      return out;
    }
    const header = s.slice(0, m);
    let body = s.slice(m + MESSAGE.length);
    let end = -1, endLen = 0;
    for (const e of [...ENDS, START]) {
      const i = body.indexOf(e);
      if (i >= 0 && (end < 0 || i < end)) end = i, endLen = e === START ? 0 : e.length;
    }
    const rest = end < 0 ? "" : body.slice(end + endLen);
    const raw = body;
    body = end < 0 ? settled(body, partial, MARKERS) : body.slice(0, end);
    // The reply ends in this body: plain text only extends it (once it has begun, so joining adds nothing).
    const open = end < 0 && partial && body === raw && body.trim() !== "";
    const channel = /<\|channel\|>\s*([A-Za-z_]+)/.exec(header)?.[1] ?? "";
    const to = /\bto=([^\s<]+)/.exec(header)?.[1];
    if (to) {
      const name = to.startsWith("functions.") ? to.slice("functions.".length) : to;
      const call: ReadCall = { name, arguments: end < 0 && partial ? body : argumentsText(body) };
      out.calls.push(call);
      if (open) out.tail = "args";
    } else if (channel === "analysis") {
      out.reasoning = joinText(out.reasoning, body);
      if (open) out.tail = "reasoning";
    } else {
      out.content = joinText(out.content, body);
      if (open) out.tail = "content";
    }
    if (end < 0) return out;
    s = rest;
  }
  return out;
}

export const HARMONY: Family = {
  name: "harmony",
  markers: MARKERS,
  callOpeners: [],
  triggers: "<",
  ownsReasoning: true,
  parse,
};
