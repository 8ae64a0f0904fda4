// Owns DeepSeek's tool-call format (V3, R1 and V3.1): a calls section of full-width-bar tokens,
// `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>` (V3,
// R1; calls separated by a newline) or `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>` (V3.1),
// closed by `<｜tool▁calls▁end｜>`. Reasoning (R1, V3.1 thinking) is a `<think>` block, read upstream.
// R1 distills sometimes leave out the section's opening token; a call token alone opens it too.
import { argumentsText, type Family, joinText, type ReadCall, type ReadOutput, settled } from "./family.ts";

export const CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
const CALLS_END = "<｜tool▁calls▁end｜>";
const CALL_BEGIN = "<｜tool▁call▁begin｜>";
const CALL_END = "<｜tool▁call▁end｜>";
const SEP = "<｜tool▁sep｜>";
const OPENERS = [CALLS_BEGIN, CALL_BEGIN];

function readCall(
  s: string,
  partial: boolean,
): { call: ReadCall | null; end: number; ok: boolean; tail?: boolean } {
  const sep = s.indexOf(SEP);
  if (sep < 0) return { call: null, end: -1, ok: partial };
  const head = s.slice(0, sep).trim();
  let body = s.slice(sep + SEP.length);
  let name = head;
  let skipped = sep + SEP.length;
  if (head === "function") {
    const nl = body.indexOf("\n");
    if (nl < 0) {
      if (!partial && body.includes(CALL_END)) {
        // No newline after the name: the arguments follow it directly.
        const close = body.indexOf(CALL_END);
        const m = /^([^\s{`]+)([\s\S]*)$/.exec(body.slice(0, close));
        if (!m) return { call: null, end: -1, ok: false };
        return {
          call: { name: m[1], arguments: argumentsText(m[2]) },
          end: skipped + close + CALL_END.length,
          ok: true,
        };
      }
      return { call: null, end: -1, ok: partial };
    }
    name = body.slice(0, nl).trim();
    body = body.slice(nl + 1);
    skipped += nl + 1;
    // The fence opens the arguments once its line is whole (```json\n); while it arrives nothing is read.
    const fence = /^\s*```[a-z]*\n/.exec(body);
    if (fence) body = body.slice(fence[0].length), skipped += fence[0].length;
    else if (partial && /^\s*`{0,3}[a-z]*$/.test(body)) return { call: null, end: -1, ok: true };
    else if (!partial) {
      const bare = /^\s*```[a-z]*/.exec(body);
      if (bare) body = body.slice(bare[0].length), skipped += bare[0].length;
    }
  }
  if (!name) return { call: null, end: -1, ok: false };
  const close = body.indexOf(CALL_END);
  let args = close < 0 ? settled(body, partial, [CALL_END]) : body.slice(0, close);
  args = args.replace(/\s*```\s*$/, "");
  if (close < 0) args = settled(args, partial, ["\n```", "```"]);
  if (close < 0) {
    // Plain text only extends arguments with no fence in them and nothing held back.
    const tail = partial && !body.includes("`") && args === body;
    return { call: { name, arguments: partial ? args : argumentsText(args) }, end: -1, ok: true, tail };
  }
  return { call: { name, arguments: argumentsText(args) }, end: skipped + close + CALL_END.length, ok: true };
}

function parse(text: string, partial: boolean): ReadOutput {
  const at = OPENERS.map((o) => text.indexOf(o)).filter((i) => i >= 0);
  if (at.length === 0) {
    const content = settled(text, partial, OPENERS);
    return {
      reasoning: "",
      content,
      calls: [],
      ...(partial && content === text ? { tail: "content" as const } : {}),
    };
  }
  const start = Math.min(...at);
  const before = text.slice(0, start);
  let s = text.slice(start);
  if (s.startsWith(CALLS_BEGIN)) s = s.slice(CALLS_BEGIN.length);
  const calls: ReadCall[] = [];
  let after = "";
  for (;;) {
    s = s.trimStart();
    if (s.startsWith(CALL_BEGIN)) {
      const r = readCall(s.slice(CALL_BEGIN.length), partial);
      if (!r.ok) return { reasoning: "", content: text, calls: [] };
      if (r.call) calls.push(r.call);
      if (r.end < 0) {
        if (r.tail) return { reasoning: "", content: before, calls, tail: "args" };
        break;
      }
      s = s.slice(CALL_BEGIN.length + r.end);
      continue;
    }
    if (s.startsWith(CALLS_END)) after = s.slice(CALLS_END.length);
    else if (s && !(partial && (CALL_BEGIN.startsWith(s) || CALLS_END.startsWith(s)))) after = s;
    break;
  }
  if (!partial && calls.length === 0) return { reasoning: "", content: text, calls: [] };
  return { reasoning: "", content: joinText(before, settled(after, partial, OPENERS)), calls };
}

export const DEEPSEEK: Family = {
  name: "deepseek",
  markers: [],
  triggers: "<`",
  callOpeners: OPENERS,
  parse,
};
