// Owns the tool-call text layouts of the common chat-template families: what the model writes around its
// call objects. The constrained-decoding grammar (constrain/tool_grammar.ts) generates exactly this layout
// and the output parser (tool_parser.ts) reads it back, tolerating the usual variations.

export interface ToolCallFormat {
  /** hermes, mistral, llama3, or a family's own layout (formats/wiring.ts). */
  readonly name: string;
  /** Written once before the calls (parser: the marker that starts tool-call mode; "" = none). */
  readonly prefix: string;
  /** Written around each call object. */
  readonly open: string;
  readonly close: string;
  /** Between two calls. */
  readonly sep: string;
  /** Written once after the calls. */
  readonly suffix: string;
  /** The member holding the arguments in the call object. */
  readonly argsKey: "arguments" | "parameters";
  /** The member holding the name (default "name"; Command R/A: "tool_name"). */
  readonly nameKey?: string;
  /**
   * The name is written as it is, outside the arguments, followed by this text and then the arguments'
   * JSON (DeepSeek, Mistral v11, Harmony, Kimi): there is no call object.
   */
  readonly nameAfter?: string;
  /**
   * Arguments written as keyed parameters after the name and `nameAfter`, not as a JSON object: each
   * property in schema order (optional ones may be left out) as `open` (its `{key}` replaced by the key), the
   * value as JSON, `close`; `between` separates two parameters and `end` follows the last. Qwen3-Coder's XML
   * (`<parameter={key}>\n`), GLM's `<arg_key>`/`<arg_value>` pairs, pythonic calls (`{key}=`, ", ", ")").
   */
  readonly params?: { open: string; close: string; between: string; end: string };
  /** Whether the template family has parallel calls at all. */
  readonly parallel: boolean;
}

/** Qwen2/2.5/3, Hermes 2/3 and most templates derived from them. */
export const HERMES: ToolCallFormat = {
  name: "hermes",
  prefix: "",
  open: "<tool_call>\n",
  close: "\n</tool_call>",
  sep: "\n",
  suffix: "",
  argsKey: "arguments",
  parallel: true,
};

/** Mistral v0.3 / Nemo: `[TOOL_CALLS] [{...}, {...}]`. */
export const MISTRAL: ToolCallFormat = {
  name: "mistral",
  prefix: "[TOOL_CALLS] [",
  open: "",
  close: "",
  sep: ", ",
  suffix: "]",
  argsKey: "arguments",
  parallel: true,
};

/** Llama 3.1/3.2 JSON tool calling: the whole reply is `{"name": ..., "parameters": {...}}`. */
export const LLAMA3: ToolCallFormat = {
  name: "llama3",
  prefix: "",
  open: "",
  close: "",
  sep: "; ",
  suffix: "",
  argsKey: "parameters",
  parallel: false,
};

/** Picks the family a chat template writes tool calls in (Hermes when it cannot tell). */
export function detectToolFormat(chatTemplate: string | null | undefined): ToolCallFormat {
  const t = chatTemplate ?? "";
  if (t.includes("<tool_call>")) return HERMES;
  if (t.includes("[TOOL_CALLS]")) return MISTRAL;
  if (t.includes("<|python_tag|>") || (t.includes("<|eot_id|>") && t.includes('"parameters"'))) return LLAMA3;
  return HERMES;
}
