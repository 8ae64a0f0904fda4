// Owns Mistral's tool-call formats: v11+ (Mistral Small 3.x, Magistral, Devstral, Ministral 3)
// `[TOOL_CALLS]NAME[ARGS]{...}` with `[TOOL_CALLS]` again before each parallel call (and an optional
// `[CALL_ID]id` before `[ARGS]`), and the older v0.3 / Nemo `[TOOL_CALLS] [{"name": ..., "arguments": ...}]`.
// Magistral's `[THINK]...[/THINK]` reasoning is read upstream (reasoning.ts takes the family's tags).
import {
  argumentsText,
  type Family,
  joinText,
  jsonEnd,
  type ReadCall,
  type ReadOutput,
  settled,
} from "./family.ts";
import { readJsonCalls } from "./json_calls.ts";

const CALLS = "[TOOL_CALLS]";
const ARGS = "[ARGS]";
const CALL_ID = "[CALL_ID]";
const MARKERS = [CALLS, ARGS, CALL_ID];

function parse(text: string, partial: boolean): ReadOutput {
  const at = text.indexOf(CALLS);
  if (at < 0) return { reasoning: "", content: settled(text, partial, [CALLS]), calls: [] };
  const calls: ReadCall[] = [];
  let s = text.slice(at);
  let after = "";
  while (s.startsWith(CALLS)) {
    s = s.slice(CALLS.length);
    const lead = s.trimStart();
    if (lead.startsWith("[") || lead.startsWith("{")) {
      // v0.3: a JSON list of call objects.
      const r = readJsonCalls(lead);
      if (!r.ok) return partial ? { reasoning: "", content: text.slice(0, at), calls } : whole(text);
      calls.push(...r.calls);
      if (r.end < 0) return { reasoning: "", content: text.slice(0, at), calls };
      s = lead.slice(r.end);
      continue;
    }
    const a = s.indexOf(ARGS);
    if (a < 0) {
      if (!partial) return whole(text);
      return { reasoning: "", content: text.slice(0, at), calls };
    }
    const name = s.slice(0, a).split(CALL_ID)[0].trim();
    if (!name) return partial ? { reasoning: "", content: text.slice(0, at), calls } : whole(text);
    const body = s.slice(a + ARGS.length);
    const end = jsonEnd(body);
    if (end < 0) {
      calls.push({ name, arguments: partial ? settled(body, partial, MARKERS) : argumentsText(body) });
      return { reasoning: "", content: text.slice(0, at), calls };
    }
    calls.push({ name, arguments: argumentsText(body.slice(0, end)) });
    s = body.slice(end);
    const next = s.trimStart();
    if (next.startsWith(CALLS)) s = next;
    else if (partial && CALLS.startsWith(next)) s = "";
  }
  after = s;
  return { reasoning: "", content: joinText(text.slice(0, at), settled(after, partial, [CALLS])), calls };
}

function whole(text: string): ReadOutput {
  return { reasoning: "", content: text, calls: [] };
}

export const MISTRAL_V11: Family = {
  name: "mistral",
  markers: MARKERS,
  callOpeners: [CALLS],
  parse,
};
