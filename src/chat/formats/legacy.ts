// Owns the three families read by the original streaming tool parser (tools/tool_parser.ts): Hermes/Qwen
// `<tool_call>{...}</tool_call>`, Mistral v0.3 `[TOOL_CALLS] [...]` and Llama 3.1/3.2 JSON (`<|python_tag|>`
// or a bare object as the reply), as families, so detection, masking and markers treat every family alike.
import { HERMES, LLAMA3, MISTRAL, parseToolCalls, type ToolCallFormat } from "../tools/mod.ts";
import { type Family, jsonOrText } from "./family.ts";

export interface LegacyFamily extends Family {
  readonly legacy: ToolCallFormat;
}

function legacy(name: string, format: ToolCallFormat, markers: string[], openers: string[]): LegacyFamily {
  return {
    name,
    legacy: format,
    markers,
    callOpeners: openers,
    parse(text) {
      const r = parseToolCalls(text, format);
      return { reasoning: "", content: r.content, calls: r.calls };
    },
  };
}

export const HERMES_FAMILY: LegacyFamily = {
  ...legacy("hermes", HERMES, [], ["<tool_call>"]),
  // SmolLM3's template shows an assistant turn's content only: its calls are written there.
  writeCalls: (calls) =>
    calls.map((c) =>
      `<tool_call>\n${JSON.stringify({ name: c.name, arguments: jsonOrText(c.arguments) })}\n</tool_call>`
    )
      .join("\n"),
};

export const MISTRAL_V3_FAMILY = legacy("mistral_v3", MISTRAL, ["[TOOL_CALLS]"], ["[TOOL_CALLS]"]);
export const LLAMA3_FAMILY = legacy("llama3", LLAMA3, ["<|python_tag|>"], ["<|python_tag|>"]);

export function isLegacy(f: Family): f is LegacyFamily {
  return (f as LegacyFamily).legacy !== undefined;
}
