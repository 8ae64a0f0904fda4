// Owns what the benchmarks share: medians (robust to the noisy shared machine), percentiles of sorted samples,
// where to find a benchmark model, and fixed-length chat jobs.
import type { ChatJob, ChatMessage } from "../src/engines/types.ts";
import { chatJob } from "../tests/support/chat_job.ts";

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The p-th percentile of already sorted samples (nearest rank: the smallest with at least p% at or below it). */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** The first candidate folder (relative to `root`) holding a model, or the last one (so errors name it). */
export function firstModelDir(root: string, candidates: string[]): string {
  const found = candidates.map((c) => `${root}${c}`).find((c) => {
    try {
      return Deno.statSync(`${c}/config.json`).isFile;
    } catch {
      return false;
    }
  });
  return found ?? `${root}${candidates.at(-1)}`;
}

/** A speed benchmark's job: exactly `newTokens` tokens (eos ignored), plain sampling at temperature 1. */
export function fixedLengthJob(messages: ChatMessage[], newTokens: number): ChatJob {
  const job = chatJob(messages, { maxTokens: newTokens, ignoreEos: true, seed: 0n });
  job.sampling.temperature = 1;
  return job;
}
