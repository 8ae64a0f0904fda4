// Owns the think-tiny generator: chat-tiny's crafted decoder and tokenizer taught to think first, as Qwen3
// does. Every reply opens a `<think>` block with a fixed sentence, closes it, and then answers as chat-tiny
// would (the default greeting, the weather tool call, the tool-result sentence). Its Qwen3-style template
// writes an empty block into the generation prompt when `enable_thinking` is false; the reply chains then
// continue from that block's last token straight into the answer. So tests can tell exactly which text is
// reasoning, which is the answer, and whether thinking was switched off. `<think>`/`</think>` are added tokens
// that are not special, as in Qwen3.
import { byteLevel } from "./bpe_tokenizer.ts";
import { writeCraftedDecoder } from "./chat_tiny.ts";
import {
  ADDED_TOKENS,
  buildChatTinyVocab,
  extendableVocab,
  modeReplies,
  type ReplyChain,
} from "./chat_tiny_vocab.ts";
import { QWEN3_CHAT_TEMPLATE } from "./chat_templates.ts";

export const VERSION = "think-tiny-1";

const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";

/** Reasoning (the block's trimmed text) and answer of each mode; `tool` answers with chat-tiny's call. */
export const THINK_REPLIES = {
  default: { reasoning: "The user said hello.", answer: "Hello from think-tiny!" },
  tool_result: { reasoning: "The tool answered.", answer: "It is sunny in Paris." },
  tool: { reasoning: "The user needs a tool." },
} as const;

const MODES = ["tool_result", "tool"] as const;

export async function generate(outDir: string): Promise<void> {
  const v = buildChatTinyVocab();
  // Generation-only tokens ("\\nThe", a tool's name) so that no reply token repeats.
  const { vocab, fused } = extendableVocab(v.vocab);
  const thought = (sentence: string) => {
    const [first, ...rest] = sentence.split(" ");
    const body = v.bpe.encode(" " + rest.join(" ").replace(/\.$/, ""));
    return [THINK_OPEN, fused(`\n${first}`), ...body, fused(".\n"), THINK_CLOSE, byteLevel("\n\n")];
  };
  const chain = (sentence: string, answer: string[]): ReplyChain => ({
    tokens: [...thought(sentence), ...answer],
  });
  const chains = [
    chain(THINK_REPLIES.tool_result.reasoning, v.bpe.encode(THINK_REPLIES.tool_result.answer)),
    chain(THINK_REPLIES.tool.reasoning, v.chains.tool.tokens),
    chain(THINK_REPLIES.default.reasoning, v.bpe.encode(THINK_REPLIES.default.answer)),
  ];
  await writeCraftedDecoder(outDir, {
    name: "think-tiny",
    seed: "think-tiny",
    vocab,
    merges: v.merges,
    added: [...ADDED_TOKENS, { content: THINK_OPEN, special: false }, {
      content: THINK_CLOSE,
      special: false,
    }],
    chatTemplate: QWEN3_CHAT_TEMPLATE,
    ...modeReplies("think-tiny", v, MODES, chains),
  });
}
