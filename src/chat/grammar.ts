// Owns what a chat job's output must follow, compiled into grammars for the constraint (constrain/):
// response_format (json_object: any JSON object; json_schema: a document valid against the schema, strict
// or not), forced tool calls in the model's own tool-call format, and under tool_choice auto either calls or the
// response_format document as one grammar. strict defaults to false as in OpenAI:
// keywords the grammar cannot enforce are then ignored (and logged); with strict true they are refused naming
// the keyword and where it is. A schema the compiler cannot take for any reason is the request's fault:
// always InvalidRequest (a 400) naming where the schema was given, never a 500.
import type { Logger } from "../log.ts";
import { InvalidRequest } from "../errors.ts";
import type { ChatResponseFormat, ChatToolDecl, ChatToolPlan } from "../engines/types.ts";
import {
  compileJsonSchema,
  type DocumentAlternative,
  type Grammar,
  jsonObjectGrammar,
  SchemaError,
  toolCallGrammar,
  type ToolSpec,
} from "./constrain/mod.ts";
import type { ToolCallFormat } from "./tools/mod.ts";

/** Where response_format's schema sits in a request, named by its 400s. */
export const RESPONSE_SCHEMA_PARAM = "response_format.json_schema.schema";

/** The grammar the output must follow, or null for free text. */
export function responseGrammar(format: ChatResponseFormat | null | undefined, log?: Logger): Grammar | null {
  if (!format) return null;
  if (format.type === "json_object") return jsonObjectGrammar();
  const { schema, strict, name } = format;
  const grammar = compileSchema(
    () => compileJsonSchema(schema, { strict }),
    format.param ?? RESPONSE_SCHEMA_PARAM,
    `response_format '${name}'`,
  );
  if (grammar.ignored.length) {
    log?.debug("json_schema keywords not enforced (strict is false)", {
      keywords: grammar.ignored.map((i) => `${i.keyword} at ${i.path}`),
    });
  }
  return grammar;
}

const NO_PARAMS = { type: "object", properties: {}, additionalProperties: false };

/**
 * Parameters describe an object (the arguments), as OpenAI requires; strict tools' parameters must be in the
 * supported subset (InvalidRequest naming the keyword otherwise).
 */
export function checkTools(decls: ChatToolDecl[]): void {
  for (const d of decls) {
    const type = d.tool.parameters?.type;
    if (type !== undefined && type !== "object") {
      throw new InvalidRequest(
        `Invalid schema for function '${d.tool.name}': the parameters must be a JSON Schema of type 'object', ` +
          `got type ${JSON.stringify(type)}.`,
        d.param,
        "invalid_json_schema",
      );
    }
    if (d.tool.strict !== true) continue;
    compileSchema(
      () => compileJsonSchema(d.tool.parameters ?? NO_PARAMS, { strict: true }),
      d.param,
      `function '${d.tool.name}'`,
    );
  }
}

/** The grammar of a forced call in the model's tool-call format; InvalidRequest naming the tool whose schema fails. */
export function forcedCallGrammar(plan: ChatToolPlan, format: ToolCallFormat): Grammar {
  const forced = plan.forced!;
  return callsGrammar(plan, forced.tools, { parallel: forced.parallel, format });
}

/**
 * tool_choice auto with response_format: the reply is either calls of the offered tools or a document in the
 * format, one grammar (OpenAI documents both as possible; neither is dropped). Null when no tool is offered.
 */
export function callOrResponseGrammar(
  plan: ChatToolPlan,
  format: ToolCallFormat,
  responseFormat: ChatResponseFormat,
  log?: Logger,
): Grammar | null {
  const offered = new Set(plan.offered?.map((t) => t.name));
  const decls = plan.declared.filter((d) => offered.has(d.tool.name));
  if (!decls.length || plan.maxCalls === 0) return null;
  const document = responseFormat.type === "json_object"
    ? { schema: true }
    : { schema: responseFormat.schema, strict: responseFormat.strict };
  const grammar = callsGrammar(plan, decls, { parallel: plan.maxCalls > 1, format }, {
    document,
    param: responseFormat.type === "json_schema"
      ? responseFormat.param ?? RESPONSE_SCHEMA_PARAM
      : "response_format",
  });
  if (grammar.ignored.length) {
    log?.debug("json_schema keywords not enforced (strict is false)", {
      keywords: grammar.ignored.map((i) => `${i.keyword} at ${i.path}`),
    });
  }
  return grammar;
}

function callsGrammar(
  plan: ChatToolPlan,
  decls: ChatToolDecl[],
  opts: { parallel: boolean; format: ToolCallFormat },
  withDocument?: { document: DocumentAlternative; param: string },
): Grammar {
  const specs: ToolSpec[] = decls.map(({ tool }) => ({
    name: tool.name,
    ...(tool.parameters !== undefined ? { parameters: tool.parameters } : {}),
    strict: tool.strict === true,
  }));
  try {
    return toolCallGrammar(specs, opts, withDocument?.document);
  } catch (e) {
    const index = (e as { tool?: number }).tool;
    if (index === undefined && withDocument) throw schemaError(e, withDocument.param, "response_format");
    const decl = index !== undefined ? decls[index] : undefined;
    throw schemaError(e, decl?.param ?? plan.param, `function '${decl?.tool.name ?? "?"}'`);
  }
}

/** Runs a schema compilation; its failures become InvalidRequest naming `param`. */
export function compileSchema(compile: () => Grammar, param: string, what: string): Grammar {
  try {
    return compile();
  } catch (e) {
    throw schemaError(e, param, what);
  }
}

/** The InvalidRequest for a schema the grammar compiler refused. */
export function schemaError(e: unknown, param: string, what: string): InvalidRequest {
  if (e instanceof SchemaError) {
    const where = e.path === "#" ? "at the schema's root" : `at ${e.path}`;
    const message = e.reason === "unsupported"
      ? `Invalid schema for ${what}: the keyword '${e.keyword}' ${where} is not supported in strict mode. ` +
        `Supported: type, properties, required, additionalProperties, items, minItems, maxItems, enum, ` +
        `const, anyOf, $ref, $defs, minimum, maximum, exclusiveMinimum, exclusiveMaximum (or set 'strict' ` +
        `to false to have unsupported keywords ignored).`
      : `Invalid schema for ${what}: ${e.message}.`;
    return new InvalidRequest(message, param, "invalid_json_schema");
  }
  return new InvalidRequest(
    `Invalid schema for ${what}: ${(e as Error)?.message ?? String(e)}.`,
    param,
    "invalid_json_schema",
  );
}
