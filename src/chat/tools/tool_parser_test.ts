import assert from "node:assert/strict";
import { HERMES, LLAMA3, MISTRAL, type ToolCallFormat } from "./formats.ts";
import {
  collect,
  parseToolCalls,
  ToolCallStreamParser,
  type ToolEvent,
  ToolOutputParser,
} from "./tool_parser.ts";
import { prng } from "../../../tests/support/synthetic_vocab.ts";

const call = (name: string, args: unknown, key = "arguments") =>
  `<tool_call>\n${JSON.stringify({ name, [key]: args })}\n</tool_call>`;

Deno.test("tool parser: Hermes calls, content around them, whitespace at the seams dropped", () => {
  const text = `Let me check.\n${call("get_weather", { city: "Paris" })}\n${call("get_time", {})}`;
  const r = parseToolCalls(text);
  assert.equal(r.content, "Let me check.");
  assert.deepEqual(r.calls, [
    { name: "get_weather", arguments: '{"city":"Paris"}' },
    { name: "get_time", arguments: "{}" },
  ]);
  assert.equal(r.invalid, 0);
});

Deno.test("tool parser: tolerates missing newlines, 'parameters', string-encoded and missing arguments", () => {
  assert.deepEqual(
    parseToolCalls('<tool_call>{"name": "f", "arguments": {"a": [1, {"b": "}"}]}}</tool_call>').calls,
    [
      { name: "f", arguments: '{"a": [1, {"b": "}"}]}' },
    ],
  );
  assert.deepEqual(parseToolCalls('<tool_call>{"name":"f","parameters":{"x":1}}</tool_call>').calls, [
    { name: "f", arguments: '{"x":1}' },
  ]);
  assert.deepEqual(
    parseToolCalls('<tool_call>{"name": "f", "arguments": "{\\"x\\": 2}"}</tool_call>').calls,
    [
      { name: "f", arguments: '{"x": 2}' },
    ],
  );
  assert.deepEqual(parseToolCalls('<tool_call>{"name": "f"}</tool_call>').calls, [{
    name: "f",
    arguments: "{}",
  }]);
  assert.deepEqual(parseToolCalls('<tool_call>{"name": "f", "arguments": null}</tool_call>').calls, [
    { name: "f", arguments: "{}" },
  ]);
  // Arguments before the name, and markup inside a string argument.
  assert.deepEqual(
    parseToolCalls(
      '<tool_call>\n{"arguments": {"html": "</tool_call><tool_call>"}, "name": "render"}\n</tool_call>',
    ),
    {
      content: "",
      calls: [{ name: "render", arguments: '{"html": "</tool_call><tool_call>"}' }],
      invalid: 0,
    },
  );
});

Deno.test("tool parser: broken blocks are dropped, never shown; a call cut off ends as it stands", () => {
  const r = parseToolCalls("Hi<tool_call>\nnot json at all\n</tool_call> there");
  assert.equal(r.content, "Hithere");
  assert.deepEqual(r.calls, []);
  assert.equal(r.invalid, 1);
  const cut = parseToolCalls('<tool_call>\n{"name": "f", "arguments": {"q": "par');
  assert.deepEqual(cut.calls, [{ name: "f", arguments: '{"q": "par' }]);
  // A block missing its close tag, followed by another call.
  const two = parseToolCalls(
    '<tool_call>{"name": "a", "arguments": {}}\n<tool_call>{"name": "b", "arguments": {}}',
  );
  assert.deepEqual(two.calls.map((c) => c.name), ["a", "b"]);
  assert.equal(two.content, "");
});

Deno.test("tool parser: text that only resembles markup stays content", () => {
  for (
    const t of ["a < b and <tool", "x <tool_cal y", "<tool_calls> are nice", "<<tool_call", "ends with <"]
  ) {
    const r = parseToolCalls(t);
    assert.equal(r.content, t);
    assert.deepEqual(r.calls, []);
  }
});

Deno.test("tool parser: Mistral and Llama 3 layouts", () => {
  const m = parseToolCalls(
    'Sure. [TOOL_CALLS] [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]',
    MISTRAL,
  );
  assert.equal(m.content, "Sure.");
  assert.deepEqual(m.calls, [{ name: "a", arguments: '{"x": 1}' }, { name: "b", arguments: "{}" }]);
  const l = parseToolCalls('  {"name": "get_time", "parameters": {"tz": "UTC"}}', LLAMA3);
  assert.deepEqual(l, { content: "", calls: [{ name: "get_time", arguments: '{"tz": "UTC"}' }], invalid: 0 });
  // A reply that is JSON but not a call stays content.
  assert.deepEqual(parseToolCalls('{"answer": 42}', LLAMA3), {
    content: '{"answer": 42}',
    calls: [],
    invalid: 0,
  });
  assert.deepEqual(
    parseToolCalls('<|python_tag|>{"name": "f", "parameters": {}}; {"name": "g"}', LLAMA3).calls,
    [
      { name: "f", arguments: "{}" },
      { name: "g", arguments: "{}" },
    ],
  );
});

// ------------------------------------------------------------------------------------------- streaming

/** Random replies: content pieces (some markup-like) and calls in the format's layout; plus those calls. */
function randomReply(
  rand: () => number,
  f: ToolCallFormat,
): { text: string; calls: { name: string; args: unknown }[] } {
  const made: { name: string; args: unknown }[] = [];
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const words = ["hello", "<", "<tool", "a<b", "{}", '"q"', "é中😀", "\n", "  ", "[TOOL", "{", "ok."];
  const content = () =>
    Array.from({ length: Math.floor(rand() * 4) }, () => pick(words)).join(pick([" ", ""]));
  const value = (d: number): unknown => {
    const r = rand();
    if (d > 2 || r < 0.3) return pick(["x", "}</tool_call>", 'q"uote', "üñ", 1.5, -3, true, null]);
    if (r < 0.65) {
      return Object.fromEntries(
        Array.from({ length: Math.floor(rand() * 3) }, (_, i) => [`k${i}`, value(d + 1)]),
      );
    }
    return Array.from({ length: Math.floor(rand() * 3) }, () => value(d + 1));
  };
  const obj = () => {
    const args = Object.fromEntries(
      Array.from({ length: Math.floor(rand() * 3) }, (_, i) => [`p${i}`, value(0)]),
    );
    const body = { name: pick(["get_weather", "search", "f_1"]), [f.argsKey]: args };
    made.push({ name: body.name as string, args });
    return rand() < 0.5 ? JSON.stringify(body) : JSON.stringify(body, null, 1);
  };
  const n = Math.floor(rand() * 3);
  if (f.name === "hermes") {
    let s = content();
    for (let i = 0; i < n; i++) {
      s += pick(["", "\n"]) + "<tool_call>" + pick(["\n", ""]) + obj() + pick(["\n", ""]) + "</tool_call>" +
        (rand() < 0.3 ? content() : "");
    }
    return { text: s, calls: made };
  }
  if (f.name === "mistral") {
    const text = content();
    const calls = Array.from({ length: n }, obj);
    return { text: text + (n ? ` [TOOL_CALLS] [${calls.join(", ")}]` : ""), calls: made };
  }
  return { text: n ? Array.from({ length: n }, obj).join("; ") : content(), calls: made };
}

function chunked(text: string, rand: () => number): string[] {
  const chars = [...text];
  const out: string[] = [];
  for (let i = 0; i < chars.length;) {
    const n = rand() < 0.3 ? 1 : 1 + Math.floor(rand() * 8);
    out.push(chars.slice(i, i + n).join(""));
    i += n;
  }
  return out;
}

Deno.test("tool parser: any chunking reassembles to the one-shot result; content never holds markup", () => {
  const rand = prng(42);
  for (const f of [HERMES, MISTRAL, LLAMA3]) {
    for (let i = 0; i < 300; i++) {
      const { text, calls } = randomReply(rand, f);
      const whole = parseToolCalls(text, f);
      for (let k = 0; k < 4; k++) {
        const p = new ToolCallStreamParser(f);
        const events: ToolEvent[] = [];
        for (const c of k === 0 ? [...text] : chunked(text, rand)) events.push(...p.push(c));
        events.push(...p.end());
        const streamed = collect(events);
        assert.deepEqual(streamed, whole, `format ${f.name}, text ${JSON.stringify(text)}`);
        // Start precedes arguments, end follows them, indices are in order.
        const started = new Set<number>();
        for (const e of events) {
          if (e.type === "start") {
            assert.equal(e.index, started.size);
            started.add(e.index);
          } else if (e.type === "args" || e.type === "end") assert.ok(started.has(e.index));
        }
      }
      // The calls the reply was made of, read back.
      assert.deepEqual(
        whole.calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) })),
        calls,
        text,
      );
      if (f.name === "hermes") {
        assert.ok(!whole.content.includes("<tool_call>") && !whole.content.includes("</tool_call>"), text);
      }
      if (f.name === "mistral") assert.ok(!whole.content.includes("[TOOL_CALLS]"), text);
    }
  }
});

Deno.test("tool parser: ChatOutputParser adapter gives OpenAI-shaped deltas and finish reason", () => {
  const text = `Checking.${call("get_weather", { city: "Paris", unit: "celsius" })}${call("get_time", {})}`;
  let n = 0;
  const p = new ToolOutputParser(HERMES, () => `call_${n++}`);
  const deltas = [...chunked(text, prng(5)).flatMap((c) => p.push(c)), ...p.end()];
  assert.equal(p.finishReason, "tool_calls");
  const content = deltas.map((d) => d.content ?? "").join("");
  assert.equal(content, "Checking.");
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for (const d of deltas) {
    for (const t of d.toolCalls ?? []) {
      if (!calls.has(t.index)) {
        // The first delta of a call carries its id and name.
        assert.ok(t.id && t.name, JSON.stringify(t));
        calls.set(t.index, { id: t.id, name: t.name, arguments: "" });
      } else assert.equal(t.id, undefined);
      calls.get(t.index)!.arguments += t.arguments ?? "";
    }
  }
  assert.deepEqual([...calls.values()], [
    { id: "call_0", name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
    { id: "call_1", name: "get_time", arguments: "{}" },
  ]);
  const plain = new ToolOutputParser();
  assert.deepEqual([...plain.push("just text"), ...plain.end()], [{ content: "just text" }]);
  assert.equal(plain.finishReason, undefined);
});
