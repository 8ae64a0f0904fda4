// Tests that transformers.js loads chat-tiny from models/generated and that greedy generation gives exactly
// the replies documented in tools/models/README.md, in every shipped precision.
import assert from "node:assert/strict";
import {
  AutoModelForCausalLM,
  AutoTokenizer,
  env,
  type PreTrainedTokenizer,
  Tensor,
} from "@huggingface/transformers";
import { ensureModels, GENERATED_DIR } from "../ensure_models.ts";
import { buildChatTinyVocab } from "./chat_tiny_vocab.ts";

env.allowRemoteModels = false;
env.localModelPath = GENERATED_DIR;

const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

interface Case {
  name: string;
  messages: Record<string, unknown>[];
  tools?: unknown[];
  maxNewTokens: number;
  /** decoded with skip_special_tokens */
  text: string;
  /** generated token count, eos included when the reply ends by itself */
  tokens: number;
  endsWithEos: boolean;
}

const CASES: Case[] = [
  {
    name: "default reply ends with eos",
    messages: [{ role: "user", content: "Hi there!" }],
    maxNewTokens: 32,
    text: "Hello from chat-tiny!",
    tokens: 6,
    endsWithEos: true,
  },
  {
    name: "'forever' never stops: exactly max_new_tokens",
    messages: [{ role: "user", content: "Count forever" }],
    maxNewTokens: 12,
    text: "Tick tock tick tock tick tock tick tock tick tock tick tock",
    tokens: 12,
    endsWithEos: false,
  },
  {
    name: "'unicode' gives multi-byte UTF-8 split across tokens",
    messages: [{ role: "user", content: "Say something in unicode" }],
    maxNewTokens: 32,
    text: "Café 東京 🙂",
    tokens: 16,
    endsWithEos: true,
  },
  {
    name: "'weather' gives a Qwen2.5-format tool call",
    messages: [{ role: "user", content: "What's the weather in Paris?" }],
    tools: [WEATHER_TOOL],
    maxNewTokens: 32,
    text: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    tokens: 16,
    endsWithEos: true,
  },
  {
    name: "a tool result gives a final answer",
    messages: [
      { role: "user", content: "What's the weather in Paris?" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ type: "function", function: { name: "get_weather", arguments: { city: "Paris" } } }],
      },
      { role: "tool", content: '{"temperature": 22, "sky": "sunny"}' },
    ],
    tools: [WEATHER_TOOL],
    maxNewTokens: 32,
    text: "It is sunny in Paris.",
    tokens: 7,
    endsWithEos: true,
  },
];

await ensureModels({ only: ["chat-tiny"] });
const tokenizer = await AutoTokenizer.from_pretrained("chat-tiny");
const IM_END = tokenizer.convert_tokens_to_ids("<|im_end|>") as number;

function prompt(tok: PreTrainedTokenizer, c: Case): string {
  return tok.apply_chat_template(c.messages as never, {
    add_generation_prompt: true,
    tokenize: false,
    tools: c.tools as never,
  }) as string;
}

async function greedy(dtype: "fp32" | "q8" | "q4", c: Case): Promise<number[]> {
  const model = await loadModel(dtype);
  const inputs = tokenizer(prompt(tokenizer, c));
  const out =
    (await model.generate({ ...inputs, max_new_tokens: c.maxNewTokens, do_sample: false })) as Tensor;
  return Array.from(out.data as BigInt64Array, Number).slice(inputs.input_ids.dims[1]);
}

const models = new Map<string, Awaited<ReturnType<typeof AutoModelForCausalLM.from_pretrained>>>();
async function loadModel(dtype: "fp32" | "q8" | "q4") {
  let m = models.get(dtype);
  if (!m) models.set(dtype, m = await AutoModelForCausalLM.from_pretrained("chat-tiny", { dtype }));
  return m;
}

for (const dtype of ["fp32", "q8", "q4"] as const) {
  for (const c of CASES) {
    Deno.test(`chat-tiny ${dtype}: ${c.name}`, async () => {
      const ids = await greedy(dtype, c);
      assert.equal(tokenizer.decode(ids, { skip_special_tokens: true }), c.text);
      assert.equal(ids.length, c.tokens);
      assert.equal(ids.at(-1) === IM_END, c.endsWithEos);
      assert.equal(ids.slice(0, -1).includes(IM_END), false);
    });
  }
}

Deno.test("chat-tiny: the unicode reply splits characters across byte-level tokens", async () => {
  const ids = await greedy("fp32", CASES[2]);
  const pieces = ids.slice(0, -1).map((id) => tokenizer.decode([id]));
  // é is 2 tokens, each CJK character 3, the emoji 4: single-token decodes of partial characters are U+FFFD.
  assert.equal(pieces.filter((p) => p.includes("\uFFFD")).length, 12);
  assert.equal(
    new TextDecoder().decode(
      new Uint8Array([...new TextEncoder().encode(tokenizer.decode(ids, { skip_special_tokens: true }))]),
    ),
    "Café 東京 🙂",
  );
});

Deno.test("chat-tiny: the chat template renders Qwen2.5's layout", () => {
  const text = prompt(tokenizer, CASES[4]);
  assert.ok(
    text.startsWith(
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n",
    ),
  );
  assert.ok(
    text.includes('\n<tools>\n{"type": "function", "function": {"name": "get_weather", "description": '),
  );
  assert.ok(
    text.includes(
      '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n',
    ),
  );
  assert.ok(
    text.includes(
      '<|im_start|>user\n<tool_response>\n{"temperature": 22, "sky": "sunny"}\n</tool_response><|im_end|>\n',
    ),
  );
  assert.ok(text.endsWith("<|im_start|>assistant\n"));
});

Deno.test("chat-tiny: sampling works, logits are finite with a ~10 margin", async () => {
  const model = await loadModel("fp32");
  const inputs = tokenizer(prompt(tokenizer, CASES[0]));
  const { logits } = (await model(inputs)) as { logits: Tensor };
  const V = logits.dims[2];
  const last = Array.from((logits.data as Float32Array).subarray(logits.data.length - V));
  assert.ok(last.every(Number.isFinite));
  const sorted = [...last].sort((a, b) => b - a);
  assert.ok(sorted[0] - sorted[1] > 7 && sorted[0] - sorted[1] < 13, `margin ${sorted[0] - sorted[1]}`);
  const out =
    (await model.generate({ ...inputs, max_new_tokens: 8, do_sample: true, temperature: 1.5 })) as Tensor;
  assert.ok(out.dims[1] > inputs.input_ids.dims[1]);
});

Deno.test("chat-tiny: the generator's reference BPE agrees with transformers.js", () => {
  const { bpe } = buildChatTinyVocab();
  const ids = tokenizer.get_vocab() as Map<string, number>;
  for (
    const text of [
      "Hello from chat-tiny! What's the weather like in Paris today?",
      "Café 東京 🙂 naïve façade — 1234 tabs\tand\n\nnewlines  ",
      "Tick tock tick tock, Unicode forever",
    ]
  ) {
    assert.deepEqual(tokenizer.encode(text), bpe.encode(text).map((t) => ids.get(t)));
  }
});
