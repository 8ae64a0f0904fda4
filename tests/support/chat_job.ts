// Owns the native chat jobs tests and benchmarks hand to the pipeline: greedy, no tools, no format, unless
// they say otherwise.
import type { ChatEvent, ChatJob, ChatMessage } from "../../src/engines/types.ts";

export function chatJob(messages: ChatMessage[], extra: Partial<ChatJob> = {}): ChatJob {
  return {
    messages,
    tools: { declared: [], offered: undefined, parse: false, maxCalls: 0, forced: null, param: "tools" },
    responseFormat: null,
    n: 1,
    maxTokens: 32,
    minTokens: 0,
    ignoreEos: false,
    stop: [],
    sampling: { temperature: 0, topP: 1, topK: 0, presencePenalty: 0, frequencyPenalty: 0, logitBias: {} },
    seed: 1n,
    logprobs: null,
    ...extra,
  };
}

export async function collect(it: AsyncIterable<ChatEvent>): Promise<ChatEvent[]> {
  const out: ChatEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

/** The content of each choice, in choice order. */
export function texts(events: ChatEvent[]): string[] {
  const out: string[] = [];
  for (const ev of events) {
    if (ev.type === "start") out[ev.choice] = "";
    if (ev.type === "delta") out[ev.choice] += ev.delta.content ?? "";
  }
  return out;
}
