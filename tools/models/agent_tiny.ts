// Owns the agent-tiny generator: chat-tiny's crafted decoder, vocabulary and Qwen2.5 template with a context
// of 65536 tokens (GGUF only: agent prompts such as Claude Code's, a 7 KB system prompt and 12 tools of about
// 30 KB of JSON, are far beyond chat-tiny's 1024), whose tool-call reply is a call of Claude Code's own `Read`
// tool on a fixed file (AGENT_FILE), so a real agent can run the call and send its result back. The mode rule
// is chat-tiny's: `weather` in the prompt asks for the call, a `<tool_response>` makes it answer the tool
// result's sentence, anything else greets. The lowest-frequency RoPE pair the mode head reads turns by 0.16 rad
// over 65536 positions (rope_theta 1e6), so the marker scores (gaps of 8) stay apart across the whole window.
import { writeCraftedDecoder } from "./chat_tiny.ts";
import {
  ADDED_TOKENS,
  buildChatTinyVocab,
  extendableVocab,
  modeReplies,
  type ReplyChain,
} from "./chat_tiny_vocab.ts";
import { QWEN25_CHAT_TEMPLATE } from "./chat_templates.ts";

export const VERSION = "agent-tiny-1";
export const AGENT_TINY_CONTEXT = 65536;

/** The file agent-tiny's tool call reads (an absolute path, as Claude Code's Read tool requires). */
export const AGENT_FILE = "/tmp/oai-agent-tiny/weather.txt";
export const AGENT_REPLIES = {
  default: "Hello from agent-tiny!",
  tool_result: "It is sunny in Paris.",
  /** The call, as the Hermes layout writes it. */
  tool: `<tool_call>\n{"name": "Read", "arguments": {"file_path": "${AGENT_FILE}"}}\n</tool_call>`,
} as const;

const MODES = ["tool_result", "tool"] as const;

export async function generate(outDir: string): Promise<void> {
  const v = buildChatTinyVocab();
  // Generation-only tokens ("\\nThe", a tool's name) so that no reply token repeats.
  const { vocab, fused } = extendableVocab(v.vocab);
  // chat-tiny's call with the tool's name and its one argument swapped.
  const swap: Record<string, string> = {
    get: fused("Read"),
    city: fused("file_path"),
    Paris: fused(AGENT_FILE),
  };
  const tool = v.chains.tool.tokens.filter((t) => t !== "_weather").map((t) => swap[t] ?? t);
  const chains: ReplyChain[] = [
    { tokens: v.bpe.encode(AGENT_REPLIES.tool_result) },
    { tokens: tool },
    { tokens: v.bpe.encode(AGENT_REPLIES.default) },
  ];
  await writeCraftedDecoder(outDir, {
    name: "agent-tiny",
    seed: "agent-tiny",
    vocab,
    merges: v.merges,
    added: ADDED_TOKENS,
    chatTemplate: QWEN25_CHAT_TEMPLATE,
    ...modeReplies("agent-tiny", v, MODES, chains),
    layouts: [],
    contextLength: AGENT_TINY_CONTEXT,
  });
}
