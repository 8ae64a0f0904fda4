// Owns turning a job into prompt token ids: a conversation through the model's chat template, or a raw
// prompt (legacy completions) tokenized as it is, with fill-in-the-middle for `suffix` where the vocabulary
// has FIM tokens (StarCoder/Qwen2.5-Coder/DeepSeek-Coder spellings), refused otherwise.
import { ChatPromptError, InvalidRequest } from "../errors.ts";
import type { ChatBackend, ChatJob } from "../engines/types.ts";
import { detectFamily } from "./formats/mod.ts";
import { callsAsContent, templateRendersTools, withToolInstructions } from "./formats/instructions.ts";

/** Prefix, suffix and middle tokens, in the prefix-suffix-middle order each family's models were trained on. */
const FIM_SPELLINGS: readonly [string, string, string][] = [
  ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"],
  ["<fim_prefix>", "<fim_suffix>", "<fim_middle>"],
  ["<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"],
];

/** The model's FIM token ids, or null when its vocabulary has none. */
export function fimTokens(backend: ChatBackend): [number, number, number] | null {
  for (const spelling of FIM_SPELLINGS) {
    const ids = spelling.map((p) => backend.tokenId(p));
    if (ids.every((id) => id !== undefined)) return ids as [number, number, number];
  }
  return null;
}

/** The parameter a prompt error names. */
export function promptParam(job: ChatJob): string {
  return job.prompt ? "prompt" : "messages";
}

export function promptIds(backend: ChatBackend, job: ChatJob): number[] {
  const raw = job.prompt;
  let ids: number[];
  if (!raw) {
    try {
      // A template with no place for tools gets them in the system message, in its family's syntax.
      const offered = job.tools.offered;
      const family = detectFamily(backend.chatTemplate);
      const inline = offered?.length && !templateRendersTools(backend.chatTemplate);
      const history = callsAsContent(job.messages, family, backend.chatTemplate);
      const messages = inline ? withToolInstructions(history, family, offered) : history;
      ids = backend.render(messages, inline ? undefined : offered, {
        ...(job.thinking === undefined ? {} : { thinking: job.thinking }),
        ...(job.reasoningEffort === undefined ? {} : { reasoningEffort: job.reasoningEffort }),
      });
    } catch (e) {
      if (e instanceof ChatPromptError) throw new InvalidRequest(e.message, "messages", "invalid_value");
      throw e;
    }
  } else if ("ids" in raw) {
    for (const id of raw.ids) {
      if (id >= backend.vocabSize) {
        throw new InvalidRequest(
          `Invalid token id ${id} in 'prompt': the model's vocabulary has ids 0 to ${backend.vocabSize - 1}.`,
          "prompt",
          "invalid_value",
        );
      }
    }
    ids = raw.ids;
  } else if (raw.suffix !== undefined) {
    const fim = fimTokens(backend);
    if (!fim) {
      throw new InvalidRequest(
        `The model \`${backend.entry.id}\` does not support fill-in-the-middle (its vocabulary has no FIM tokens): 'suffix' cannot be used.`,
        "suffix",
        "unsupported_value",
      );
    }
    const [pre, suf, mid] = fim;
    ids = [pre, ...backend.encode(raw.text, false), suf, ...backend.encode(raw.suffix, false), mid];
  } else {
    ids = backend.encode(raw.text, true);
  }
  if (ids.length === 0) {
    throw new InvalidRequest(
      raw ? "The prompt is empty." : "The messages render to an empty prompt.",
      promptParam(job),
    );
  }
  return ids;
}
