// Owns the grammar of forced tool calls (tool_choice "required" or a named function): the template's markup
// around `{"name": <an offered name>, "<argsKey>": <arguments valid against that tool's parameters>}`, one
// call or (parallel) up to `maxCalls` separated as the template separates them. The call object is one
// alternative per tool, so once the name is chosen only that tool's parameters are allowed. With a document
// alternative (response_format under tool_choice auto) the reply is either such calls or that document.
import { HERMES, type ToolCallFormat } from "../tools/formats.ts";
import type { Grammar } from "./matcher.ts";
import { type Node, NodeFactory } from "./nodes.ts";
import { type CompileOptions, finish, memoGrammar, SchemaCompiler, SchemaError } from "./schema.ts";

export interface ToolSpec {
  name: string;
  /** JSON Schema of the arguments; absent: no arguments (`{}`). */
  parameters?: unknown;
  /** Unsupported keywords in parameters are errors (true) or ignored (false, the default as in OpenAI). */
  strict?: boolean;
}

export interface ToolGrammarOptions {
  /** Several calls may follow one another (parallel_tool_calls). Default false. */
  parallel?: boolean;
  /** Most calls when parallel. Default 8. */
  maxCalls?: number;
  /** The template family's layout. Default Hermes/Qwen (`<tool_call>\n...\n</tool_call>`). */
  format?: ToolCallFormat;
  whitespace?: CompileOptions["whitespace"];
}

const NO_ARGS = { type: "object", properties: {}, additionalProperties: false };

/**
 * Either a reply in the document's shape (response_format with tool_choice auto) or calls of the tools, as
 * one grammar: the model picks by its first bytes, and whichever it picks is constrained to the end.
 */
export interface DocumentAlternative {
  /** A JSON Schema (json_schema), or true for any JSON object (json_object). */
  schema: unknown;
  strict?: boolean;
}

/** Throws SchemaError (with `tool` set to the tool's index) when a tool's parameters cannot be compiled. */
export function toolCallGrammar(
  tools: readonly ToolSpec[],
  opts: ToolGrammarOptions = {},
  document?: DocumentAlternative,
): Grammar {
  if (tools.length === 0) throw new SchemaError("", "#", "invalid", "no tools to call");
  const format = opts.format ?? HERMES;
  const parallel = (opts.parallel ?? false) && format.parallel;
  const maxCalls = parallel ? Math.max(1, opts.maxCalls ?? 8) : 1;
  const key = `tools|${JSON.stringify({ ...opts, format, parallel, maxCalls })}|${JSON.stringify(tools)}|${
    JSON.stringify(document ?? null)
  }`;
  return memoGrammar(key, () => {
    const f = new NodeFactory();
    const ignored = [];
    const calls: Node[] = [];
    const argNodes: [number, Node][] = [];
    const seen = new Set<string>();
    for (const [i, t] of tools.entries()) {
      if (seen.has(t.name)) continue;
      seen.add(t.name);
      const c = new SchemaCompiler(f, t.parameters ?? NO_ARGS, {
        strict: t.strict ?? false,
        whitespace: opts.whitespace,
      });
      let args: Node;
      try {
        args = c.compile(t.parameters ?? NO_ARGS);
      } catch (e) {
        throw e instanceof SchemaError ? e.forTool(i) : e;
      }
      ignored.push(...c.ignored);
      argNodes.push([i, args]);
      calls.push(
        format.params
          ? keyedCall(f, t, c, i, format)
          : format.nameAfter !== undefined
          ? f.seq([f.lit([t.name + format.nameAfter]), args])
          : f.obj(
            [
              f.prop(format.nameKey ?? "name", f.lit([JSON.stringify(t.name)]), true),
              f.prop(format.argsKey, args, true),
            ],
            null,
            opts.whitespace ?? 1,
          ),
      );
    }
    const call = calls.length === 1 ? calls[0] : f.alt(calls);
    const seq = (parts: (string | Node)[]): Node => {
      const items = parts.filter((p) => p !== "").map((p) => typeof p === "string" ? f.lit([p]) : p);
      return items.length === 1 ? items[0] : f.seq(items);
    };
    const one = seq([format.open, call, format.close]);
    const body = maxCalls > 1
      ? f.rep(one, seq([format.sep, format.open, call, format.close]), maxCalls)
      : one;
    let root = seq([format.prefix, body, format.suffix]);
    if (document) {
      // Compiled on the same factory, so both alternatives live in one graph (document errors have no tool).
      const c = new SchemaCompiler(f, document.schema, {
        strict: document.strict ?? false,
        whitespace: opts.whitespace,
      });
      const doc = document.schema === true ? c.anyObject() : c.compile(document.schema);
      ignored.push(...c.ignored);
      root = f.alt([root, doc]);
    }
    return finish(f, root, ignored, () => {
      for (const [i, a] of argNodes) {
        if (a.minLen === Infinity) {
          throw new SchemaError(
            "",
            "#",
            "invalid",
            "invalid JSON Schema at #: no finite JSON document satisfies it",
            i,
          );
        }
      }
    });
  });
}

/**
 * A call whose arguments are keyed parameters (`format.params`): the name and `nameAfter`, then the
 * properties in schema order, each optional one possibly left out, separated by `between`, then `end`.
 * `rest[i]`: the parameters from property i on after at least one was written; `first[i]`: before any was.
 */
function keyedCall(
  f: NodeFactory,
  t: ToolSpec,
  c: SchemaCompiler,
  index: number,
  format: ToolCallFormat,
): Node {
  const k = format.params!;
  const s = (t.parameters ?? NO_ARGS) as { properties?: Record<string, unknown>; required?: string[] };
  const props = Object.entries(s.properties ?? {});
  const required = new Set(s.required ?? []);
  const param = props.map(([key, schema]) => {
    let value: Node;
    try {
      value = c.compile(schema, `#/properties/${key}`);
    } catch (e) {
      throw e instanceof SchemaError ? e.forTool(index) : e;
    }
    return [f.lit([k.open.replaceAll("{key}", key)]), value, ...(k.close ? [f.lit([k.close])] : [])];
  });
  // `end` is never empty, so every alternative writes something.
  const end = f.lit([k.end]);
  const rest: Node[] = [];
  const first: Node[] = [];
  const mk = (opts: Node[][]): Node => {
    const nodes = opts.map((o) => o.length === 1 ? o[0] : f.seq(o));
    return nodes.length === 1 ? nodes[0] : f.alt(nodes);
  };
  rest[props.length] = first[props.length] = end;
  for (let i = props.length - 1; i >= 0; i--) {
    const options: Node[][] = [];
    const firstOptions: Node[][] = [];
    let skippable = true;
    for (let j = i; j < props.length && skippable; j++) {
      options.push([...(k.between ? [f.lit([k.between])] : []), ...param[j], rest[j + 1]]);
      firstOptions.push([...param[j], rest[j + 1]]);
      skippable = !required.has(props[j][0]);
    }
    if (skippable) options.push([end]), firstOptions.push([end]);
    rest[i] = mk(options);
    first[i] = mk(firstOptions);
  }
  return f.seq([f.lit([t.name + (format.nameAfter ?? "")]), first[0]]);
}
