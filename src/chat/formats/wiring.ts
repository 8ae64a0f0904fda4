// Owns what the chat pipeline takes from a model's family: the constrained layout of a forced call in the
// family's own syntax (where the constraint can write it: JSON arguments between literal markers), the
// call-opening tokens masked under tool_choice "none", the decoder that spells the family's control-token
// markers as text (so its reader sees them; other special tokens still decode to nothing), and the tools'
// schemas the readers type XML/pythonic values with.
import type { ChatBackend, ChatToolPlan } from "../../engines/types.ts";
import type { ToolCallFormat } from "../tools/mod.ts";
import type { Family, ParseContext } from "./family.ts";
import { isLegacy } from "./legacy.ts";

const base = {
  prefix: "",
  open: "",
  close: "",
  sep: "",
  suffix: "",
  argsKey: "arguments",
  parallel: true,
} as const;

/** The forced-call layout in the family's own syntax, or null when only Hermes' JSON layout can be forced. */
export function nativeLayout(family: Family, template: string | null): ToolCallFormat | null {
  if (isLegacy(family)) return family.legacy;
  switch (family.name) {
    case "deepseek":
      return (template ?? "").includes("```json")
        ? {
          ...base,
          name: "deepseek_v3",
          prefix: "<｜tool▁calls▁begin｜>",
          open: "<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
          nameAfter: "\n```json\n",
          close: "\n```<｜tool▁call▁end｜>",
          sep: "\n",
          suffix: "<｜tool▁calls▁end｜>",
        }
        : {
          ...base,
          name: "deepseek_v3_1",
          prefix: "<｜tool▁calls▁begin｜>",
          open: "<｜tool▁call▁begin｜>",
          nameAfter: "<｜tool▁sep｜>",
          close: "<｜tool▁call▁end｜>",
          suffix: "<｜tool▁calls▁end｜>",
        };
    case "mistral":
      return { ...base, name: "mistral_v11", open: "[TOOL_CALLS]", nameAfter: "[ARGS]" };
    case "harmony":
      return {
        ...base,
        name: "harmony",
        open: "<|channel|>commentary to=functions.",
        nameAfter: " <|constrain|>json<|message|>",
        parallel: false,
      };
    case "kimi_k2":
      return {
        ...base,
        name: "kimi_k2",
        prefix: "<|tool_calls_section_begin|>",
        open: "<|tool_call_begin|>functions.",
        nameAfter: ":0<|tool_call_argument_begin|>",
        close: "<|tool_call_end|>",
        suffix: "<|tool_calls_section_end|>",
      };
    case "phi4":
      return { ...base, name: "phi4", prefix: "<|tool_call|>[", sep: ", ", suffix: "]<|/tool_call|>" };
    case "granite":
      return { ...base, name: "granite", prefix: "<|tool_call|>[", sep: ", ", suffix: "]" };
    case "command_a":
      return {
        ...base,
        name: "command_a",
        prefix: "<|START_ACTION|>[",
        sep: ", ",
        suffix: "]<|END_ACTION|>",
        nameKey: "tool_name",
        argsKey: "parameters",
      };
    case "command_r":
      return {
        ...base,
        name: "command_r",
        prefix: "Action: ```json\n[",
        sep: ", ",
        suffix: "]\n```",
        nameKey: "tool_name",
        argsKey: "parameters",
      };
    case "generic":
      return { ...base, name: "generic", prefix: '{"tool_calls": [', sep: ", ", suffix: "]}" };
    case "qwen3_coder":
      return {
        ...base,
        name: "qwen3_coder_xml",
        open: "<tool_call>\n<function=",
        nameAfter: ">\n",
        params: { open: "<parameter={key}>\n", close: "\n</parameter>\n", between: "", end: "</function>" },
        close: "\n</tool_call>",
        sep: "\n",
      };
    case "glm":
      return {
        ...base,
        name: "glm",
        open: "<tool_call>",
        nameAfter: "\n",
        params: {
          open: "<arg_key>{key}</arg_key>\n<arg_value>",
          close: "</arg_value>\n",
          between: "",
          end: "</tool_call>",
        },
        sep: "\n",
      };
    case "llama4":
    case "lfm2":
    case "gemma": {
      // Pythonic calls with JSON values (a JSON string, number, list or object is Python too).
      const [prefix, sep, suffix] = family.name === "llama4"
        ? ["[", ", ", "]"]
        : family.name === "lfm2"
        ? ["<|tool_call_start|>[", ", ", "]<|tool_call_end|>"]
        : ["```tool_code\n", "\n", "\n```"];
      return {
        ...base,
        name: `${family.name}_pythonic`,
        prefix,
        nameAfter: "(",
        params: { open: "{key}=", close: "", between: ", ", end: ")" },
        sep,
        suffix,
      };
    }
    default:
      return null;
  }
}

/** The family's call-opening tokens (those that are one token of the vocabulary). */
export function bannedOpeners(backend: Pick<ChatBackend, "tokenId">, family: Family): number[] {
  const ids: number[] = [];
  for (const o of family.callOpeners) {
    const id = backend.tokenId(o);
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

export interface MarkerDecoder {
  decode(ids: number[]): string;
  /** A token's bytes as text (none for special tokens other than the markers). */
  bytesOf(id: number): ArrayLike<number>;
}

const utf8 = new TextEncoder();

/** Decoding in which the family's marker tokens are spelled out. */
export function markerDecoder(
  backend: Pick<ChatBackend, "decode" | "tokenId" | "tokenText">,
  markers: readonly string[],
): MarkerDecoder {
  const spelled = new Map<number, string>();
  for (const m of markers) {
    const id = backend.tokenId(m);
    if (id !== undefined && backend.decode([id]) === "") spelled.set(id, m);
  }
  const plain = (x: number[]) => x.length ? backend.decode(x) : "";
  const bytesOf = (id: number): ArrayLike<number> => {
    const m = spelled.get(id);
    if (m !== undefined) return utf8.encode(m);
    return backend.decode([id]) === "" ? [] : backend.tokenText(id).bytes;
  };
  if (spelled.size === 0) return { decode: plain, bytesOf };
  return {
    decode(ids) {
      let out = "", from = 0;
      for (let i = 0; i < ids.length; i++) {
        const m = spelled.get(ids[i]);
        if (m === undefined) continue;
        out += plain(ids.slice(from, i)) + m;
        from = i + 1;
      }
      return out + plain(ids.slice(from));
    },
    bytesOf,
  };
}

/** The declared tools' parameter schemas by name. */
export function parseContext(tools: ChatToolPlan): ParseContext {
  return { schemas: new Map(tools.declared.map((d) => [d.tool.name, d.tool.parameters])) };
}
