// Owns picking a model's output family from its chat template (issue 30), and the public surface of the
// families: their readers (family.ts), the streaming adapter (stream.ts), and the reasoning tags a family's
// template uses. Detection looks for each family's own markup in the template, most specific first; a
// template with no call syntax of its own gets the generic JSON fallback.
import type { Family } from "./family.ts";
import { DEEPSEEK } from "./deepseek.ts";
import { HARMONY } from "./harmony.ts";
import { COMMAND_A, COMMAND_R, GENERIC, GRANITE, PHI4 } from "./json_families.ts";
import { HERMES_FAMILY, isLegacy, LLAMA3_FAMILY, MISTRAL_V3_FAMILY } from "./legacy.ts";
import { MISTRAL_V11 } from "./mistral.ts";
import { GEMMA, LFM2, LLAMA4 } from "./pythonic.ts";
import { GLM, KIMI, QWEN3_CODER } from "./xml_calls.ts";

export type { Family, ParseContext, ReadCall, ReadOutput } from "./family.ts";
export { FamilyOutputParser } from "./stream.ts";
export { isLegacy };
export {
  COMMAND_A,
  COMMAND_R,
  DEEPSEEK,
  GEMMA,
  GENERIC,
  GLM,
  GRANITE,
  HARMONY,
  HERMES_FAMILY,
  KIMI,
  LFM2,
  LLAMA3_FAMILY,
  LLAMA4,
  MISTRAL_V11,
  MISTRAL_V3_FAMILY,
  PHI4,
  QWEN3_CODER,
};

/** The last template read and its family: a model's template is read once, not per request. */
let memo: { template: string; family: Family } | null = null;

/** The output family a chat template writes in. */
export function detectFamily(template: string | null | undefined): Family {
  const t = template ?? "";
  if (memo?.template === t) return memo.family;
  const family = detect(t);
  memo = { template: t, family };
  return family;
}

function detect(t: string): Family {
  const has = (...s: string[]) => s.every((x) => t.includes(x));
  if (has("<|channel|>", "<|message|>")) return HARMONY;
  if (has("<｜tool▁call▁begin｜>") || has("<｜tool▁calls▁begin｜>")) return DEEPSEEK;
  if (has("<|tool_calls_section_begin|>") || has("<|tool_call_begin|>")) return KIMI;
  if (has("<arg_key>")) return GLM;
  if (has("<function=", "<parameter=")) return QWEN3_CODER;
  if (has("[TOOL_CALLS]", "[ARGS]")) return MISTRAL_V11;
  if (has("<|START_ACTION|>")) return COMMAND_A;
  if (has("Action:", "tool_name")) return COMMAND_R;
  if (has("<|tool_call_start|>") || has("<|tool_list_start|>")) return LFM2;
  if (has("<|header_start|>") || has("<|python_start|>")) return LLAMA4;
  if (has("<|tool|>", "<|/tool|>")) return PHI4;
  if (has("<|tool_call|>") || (has("<|start_of_role|>") && /\btools\b/.test(t))) return GRANITE;
  if (has("<tool_call>")) return HERMES_FAMILY;
  if (has("[TOOL_CALLS]")) return MISTRAL_V3_FAMILY;
  if (has("<|python_tag|>") || (has("<|eot_id|>") && has('"parameters"'))) return LLAMA3_FAMILY;
  if (has("<start_of_turn>")) return GEMMA;
  if (has("<|eot_id|>") || has("<|start_header_id|>")) return LLAMA3_FAMILY;
  if (/\btools\b/.test(t)) return HERMES_FAMILY;
  return GENERIC;
}

/** Reasoning block tags of a template (read by reasoning.ts), or null when it has none. */
export function reasoningTags(template: string | null | undefined): { open: string; close: string } | null {
  const t = template ?? "";
  if (t.includes("[THINK]") || t.includes("[/THINK]")) return { open: "[THINK]", close: "[/THINK]" };
  if (t.includes("<think>") || t.includes("</think>")) return { open: "<think>", close: "</think>" };
  return null;
}
