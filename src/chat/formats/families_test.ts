// Each family's reader on what models of that family write (from the families' model cards, chat templates
// and llama.cpp's / vLLM's parser tests), read whole and streamed in every chunking: same reasoning, content
// and calls, deltas in OpenAI's shape, nothing of the markup in content, and unreadable markup kept as text.
import assert from "node:assert/strict";
import type { ChatDelta } from "../../engines/types.ts";
import {
  COMMAND_A,
  COMMAND_R,
  DEEPSEEK,
  detectFamily,
  type Family,
  FamilyOutputParser,
  GEMMA,
  GENERIC,
  GLM,
  GRANITE,
  HARMONY,
  KIMI,
  LFM2,
  LLAMA4,
  MISTRAL_V11,
  PHI4,
  QWEN3_CODER,
  reasoningTags,
} from "./mod.ts";

interface Want {
  reasoning?: string;
  content?: string;
  calls?: [string, unknown][];
}

const SCHEMAS = new Map<string, unknown>([
  ["get_weather", { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } } }],
]);

function collect(deltas: ChatDelta[]) {
  let reasoning = "", content = "";
  const calls: { id: string; name: string; args: string }[] = [];
  for (const d of deltas) {
    reasoning += d.reasoning ?? "";
    content += d.content ?? "";
    for (const c of d.toolCalls ?? []) {
      if (c.name !== undefined) {
        assert.equal(c.index, calls.length, "calls start in order");
        assert.match(c.id ?? "", /^call_/);
        calls.push({ id: c.id!, name: c.name, args: c.arguments ?? "" });
      } else {
        assert.equal(c.id, undefined);
        calls[c.index].args += c.arguments ?? "";
      }
    }
  }
  return { reasoning, content, calls };
}

function run(f: Family, text: string, chunks: (s: string) => string[]) {
  const p = new FamilyOutputParser(f, { schemas: SCHEMAS });
  const deltas = [...chunks(text).flatMap((c) => p.push(c)), ...p.end()];
  return { ...collect(deltas), finish: p.finishReason };
}

const whole = (s: string) => [s];
const chars = (s: string) => [...s];
function random(seed: number) {
  return (s: string) => {
    const out: string[] = [];
    let x = seed;
    for (let i = 0; i < s.length;) {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      const n = 1 + (x % 7);
      out.push(s.slice(i, i + n));
      i += n;
    }
    return out;
  };
}

function check(f: Family, text: string, want: Want) {
  for (const chunks of [whole, chars, random(1), random(7)]) {
    const r = run(f, text, chunks);
    assert.equal(r.reasoning, want.reasoning ?? "", `${f.name} reasoning (${chunks.name})`);
    assert.equal(r.content, want.content ?? "", `${f.name} content (${chunks.name})`);
    assert.deepEqual(
      r.calls.map((c) => [c.name, JSON.parse(c.args)]),
      want.calls ?? [],
      `${f.name} calls (${chunks.name})`,
    );
    assert.equal(r.finish, (want.calls ?? []).length ? "tool_calls" : undefined);
  }
}

const PARIS: [string, unknown] = ["get_weather", { city: "Paris" }];
const ROME: [string, unknown] = ["get_weather", { city: "Rome", days: 2 }];

Deno.test("deepseek V3 / R1: one call, parallel calls, content before", () => {
  const call = (args: string) =>
    `<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n\`\`\`json\n${args}\n\`\`\`<｜tool▁call▁end｜>`;
  check(DEEPSEEK, `<｜tool▁calls▁begin｜>${call('{"city": "Paris"}')}<｜tool▁calls▁end｜>`, {
    calls: [PARIS],
  });
  check(
    DEEPSEEK,
    `Let me check.\n\n<｜tool▁calls▁begin｜>${call('{"city": "Paris"}')}\n${
      call('{"city": "Rome", "days": 2}')
    }<｜tool▁calls▁end｜>`,
    { content: "Let me check.", calls: [PARIS, ROME] },
  );
  check(DEEPSEEK, "The weather in Paris is sunny, 22 °C ☀️.", {
    content: "The weather in Paris is sunny, 22 °C ☀️.",
  });
});

Deno.test("deepseek V3.1: name then JSON arguments", () => {
  check(
    DEEPSEEK,
    `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Rome", "days": 2}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    { calls: [PARIS, ROME] },
  );
});

Deno.test("deepseek: a broken calls section is text, never dropped", () => {
  const text = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather";
  check(DEEPSEEK, text, { content: text });
});

Deno.test("harmony: analysis, final; analysis then a call (both recipient placements)", () => {
  check(
    HARMONY,
    "<|channel|>analysis<|message|>The user greets. Respond.<|end|><|start|>assistant<|channel|>final<|message|>Hello! 你好 👋",
    { reasoning: "The user greets. Respond.", content: "Hello! 你好 👋" },
  );
  check(
    HARMONY,
    '<|channel|>analysis<|message|>Need weather. Call get_weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}',
    { reasoning: "Need weather. Call get_weather.", calls: [PARIS] },
  );
  check(
    HARMONY,
    '<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>',
    { reasoning: "Call it.", calls: [PARIS] },
  );
  check(HARMONY, "Plain text, no channels.", { content: "Plain text, no channels." });
});

Deno.test("qwen3-coder XML: one and two calls, typed by the schema; JSON inside tool_call too", () => {
  const call = (city: string, days?: number) =>
    `<tool_call>\n<function=get_weather>\n<parameter=city>\n${city}\n</parameter>\n${
      days === undefined ? "" : `<parameter=days>\n${days}\n</parameter>\n`
    }</function>\n</tool_call>`;
  check(QWEN3_CODER, call("Paris"), { calls: [PARIS] });
  check(QWEN3_CODER, `I'll check both.\n${call("Paris")}\n${call("Rome", 2)}`, {
    content: "I'll check both.",
    calls: [PARIS, ROME],
  });
  check(QWEN3_CODER, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', {
    calls: [PARIS],
  });
  check(QWEN3_CODER, "<tool_call>\nnot a call\n</tool_call>", {
    content: "<tool_call>\nnot a call\n</tool_call>",
  });
});

Deno.test("mistral v11+: [TOOL_CALLS]name[ARGS]{...}, parallel, [CALL_ID]; v0.3 list", () => {
  check(MISTRAL_V11, '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', { calls: [PARIS] });
  check(
    MISTRAL_V11,
    'Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Rome", "days": 2}',
    { content: "Checking.", calls: [PARIS, ROME] },
  );
  check(MISTRAL_V11, '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]', {
    calls: [PARIS],
  });
});

Deno.test("glm 4.5: arg_key / arg_value pairs", () => {
  check(
    GLM,
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
    { calls: [ROME] },
  );
});

Deno.test("kimi k2: sections with functions.NAME:index ids", () => {
  check(
    KIMI,
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{"city": "Rome", "days": 2}<|tool_call_end|><|tool_calls_section_end|>',
    { calls: [PARIS, ROME] },
  );
});

Deno.test("pythonic: Llama 4 bare list, LFM2 markers, Gemma tool_code", () => {
  check(LLAMA4, "[get_weather(city=\"Paris\"), get_weather(city='Rome', days=2)]", { calls: [PARIS, ROME] });
  check(LLAMA4, "[1] is a citation, not a call.", { content: "[1] is a citation, not a call." });
  check(LFM2, '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>Checking.', {
    content: "Checking.",
    calls: [PARIS],
  });
  check(GEMMA, '```tool_code\nget_weather(city="Paris")\n```', { calls: [PARIS] });
});

Deno.test("JSON families: Phi-4-mini, Granite, Command R, Command A, generic", () => {
  const list = '[{"name": "get_weather", "arguments": {"city": "Paris"}}]';
  check(PHI4, `<|tool_call|>${list}<|/tool_call|>`, { calls: [PARIS] });
  check(GRANITE, `<|tool_call|>${list}`, { calls: [PARIS] });
  check(
    COMMAND_R,
    'Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]\n```',
    { calls: [PARIS] },
  );
  check(
    COMMAND_A,
    '<|START_THINKING|>I should look it up.<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>',
    { reasoning: "I should look it up.", calls: [PARIS] },
  );
  check(COMMAND_A, "<|START_RESPONSE|>It is sunny.<|END_RESPONSE|>", { content: "It is sunny." });
  check(GENERIC, `{"tool_calls": ${list}}`, { calls: [PARIS] });
  check(GENERIC, '{"answer": 42}', { content: '{"answer": 42}' });
});

Deno.test("detection: each family's template markup picks its reader", () => {
  const cases: [string, string][] = [
    ["{{'<|start|>assistant<|channel|>final<|message|>'}}", "harmony"],
    ["{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>'}}", "deepseek"],
    ["<|tool_calls_section_begin|>", "kimi_k2"],
    ["<arg_key>{{k}}</arg_key>", "glm"],
    ["<tool_call>\n<function={{name}}>\n<parameter={{p}}>", "qwen3_coder"],
    ["[TOOL_CALLS]{{name}}[ARGS]", "mistral"],
    ["<|START_ACTION|>", "command_a"],
    ["<|tool_call_start|>", "lfm2"],
    ["List of tools: <|tool_list_start|>[", "lfm2"],
    ["<|header_start|>", "llama4"],
    ["<|tool|>{{tools}}<|/tool|>", "phi4"],
    ["<|start_of_role|>{{tools}}", "granite"],
    ["<tool_call>", "hermes"],
    ["[TOOL_CALLS] [", "mistral_v3"],
    ["<|python_tag|>", "llama3"],
    ["<start_of_turn>", "gemma"],
    ["{{ messages }}", "generic"],
  ];
  for (const [t, name] of cases) assert.equal(detectFamily(t).name, name, t);
  assert.deepEqual(reasoningTags("[THINK]"), { open: "[THINK]", close: "[/THINK]" });
  assert.deepEqual(reasoningTags("</think>"), { open: "<think>", close: "</think>" });
  assert.equal(reasoningTags("plain"), null);
});

Deno.test("stream adapter: extending a field without a re-read gives exactly what re-reading gives", () => {
  const long = (w: string, n: number) =>
    Array.from({ length: n }, (_, i) => `${w}${i % 7 ? "" : "\n"} `).join("");
  const texts: [Family, string][] = [
    [
      HARMONY,
      `<|channel|>analysis<|message|>${long("think", 300)}<|end|><|start|>assistant<|channel|>commentary ` +
      `to=functions.get_weather <|constrain|>json<|message|>{"city": "${long("P", 200)}"}`,
    ],
    [
      HARMONY,
      `<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>${
        long("ans", 300)
      }`,
    ],
    [HARMONY, `plain ${long("text", 100)} with a < sign and <|channel|> later`],
    [
      DEEPSEEK,
      `${long("before", 100)}<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n` +
      `\`\`\`json\n{"city": "${long("R", 200)}"}\n\`\`\`<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    ],
    [
      DEEPSEEK,
      `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "${long("V", 150)}"}` +
      `<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    ],
  ];
  for (const [family, text] of texts) {
    // The same reader with no triggers: every piece is a re-read.
    const full: Family = { ...family, triggers: undefined };
    for (const seed of [1, 2, 3, 5, 8]) {
      const pieces = random(seed)(text);
      const fast = new FamilyOutputParser(family, { schemas: SCHEMAS }, () => "call_x");
      const slow = new FamilyOutputParser(full, { schemas: SCHEMAS }, () => "call_x");
      const a = [...pieces.flatMap((p) => fast.push(p)), ...fast.end()];
      const b = [...pieces.flatMap((p) => slow.push(p)), ...slow.end()];
      assert.deepEqual(collect(a), collect(b), `${family.name} seed ${seed}`);
    }
  }
});

Deno.test("stream adapter: a long thought or argument is not read again for every piece", () => {
  for (
    const [family, text] of [
      [
        HARMONY,
        `<|channel|>analysis<|message|>${"thinking about it. ".repeat(500)}<|end|><|start|>assistant` +
        `<|channel|>final<|message|>${"the answer. ".repeat(500)}`,
      ],
      [
        DEEPSEEK,
        `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "${"x".repeat(8000)}"}`,
      ],
    ] as const
  ) {
    let reads = 0;
    const counted: Family = { ...family, parse: (t, p, c) => (reads++, family.parse(t, p, c)) };
    const p = new FamilyOutputParser(counted);
    let pieces = 0;
    for (let i = 0; i < text.length; i += 4) p.push(text.slice(i, i + 4)), pieces++;
    p.end();
    // Only pieces with a marker character (and the end) are read again: a few dozen of thousands.
    assert.ok(reads < 50, `${family.name}: ${reads} reads for ${pieces} pieces`);
  }
});
