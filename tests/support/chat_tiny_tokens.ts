// The generated chat models' own tokenizers (chat-tiny by default, think-tiny), loaded beside the server, for
// exact prompt token counts in the e2e tests.
import { join } from "node:path";
import { MODELS_DIR } from "../helpers.ts";
import { transformersRuntime } from "../../src/engines/transformers/runtime.ts";
import { memoryLogger } from "../../src/log.ts";

async function tokenizer(model = "chat-tiny") {
  const { tf } = await transformersRuntime("cpu", memoryLogger());
  return await tf.AutoTokenizer.from_pretrained(join(MODELS_DIR, "generated", model), {
    local_files_only: true,
  });
}

/** Tokens of a conversation rendered with the chat template and its generation prompt; `thinking` is passed
 * to the template as `enable_thinking` when given. */
export async function promptTokens(
  messages: unknown[],
  tools?: unknown[],
  opts: { model?: string; thinking?: boolean } = {},
): Promise<number> {
  const ids = (await tokenizer(opts.model)).apply_chat_template(messages as never, {
    ...(opts.thinking === undefined ? {} : { enable_thinking: opts.thinking }),
    add_generation_prompt: true,
    tokenize: true,
    return_tensor: false,
    return_dict: false,
    tools: (tools ?? null) as never,
  });
  return (ids as number[]).length;
}

/** Token ids of a raw text, as the tokenizer encodes it. */
export async function encode(text: string): Promise<number[]> {
  return (await tokenizer()).encode(text);
}
