// Owns `response_format` for chat completions (issue 7): text (no constraint), json_object (any JSON object)
// and json_schema (a document valid against the schema), compiled into the grammar the engine's constraint
// follows. strict defaults to false as in OpenAI: keywords the grammar cannot enforce are then ignored (and
// logged); with strict true they are a 400 naming the keyword and where it is. A schema the compiler cannot
// take for any reason is the request's fault: always a 400, never a 500.
import { compileJsonSchema, type Grammar, jsonObjectGrammar, SchemaError } from "../chat/constrain/mod.ts";
import type { Logger } from "../log.ts";
import { ApiError } from "../http/errors.ts";
import type { ResponseFormat } from "../protocol/chat_tools.ts";

/** The grammar the output must follow, or null for free text. */
export function responseGrammar(format: ResponseFormat | undefined, log?: Logger): Grammar | null {
  if (!format || format.type === "text") return null;
  if (format.type === "json_object") return jsonObjectGrammar();
  const { schema, strict, name } = format.json_schema;
  const grammar = compileSchema(
    () => compileJsonSchema(schema, { strict: strict === true }),
    "response_format.json_schema.schema",
    `response_format '${name}'`,
  );
  if (grammar.ignored.length) {
    log?.debug("json_schema keywords not enforced (strict is false)", {
      keywords: grammar.ignored.map((i) => `${i.keyword} at ${i.path}`),
    });
  }
  return grammar;
}

/** Runs a schema compilation; its failures become 400s naming `param`. */
export function compileSchema(compile: () => Grammar, param: string, what: string): Grammar {
  try {
    return compile();
  } catch (e) {
    throw schemaError(e, param, what);
  }
}

/** The 400 for a schema the grammar compiler refused. */
export function schemaError(e: unknown, param: string, what: string): ApiError {
  if (e instanceof SchemaError) {
    const where = e.path === "#" ? "at the schema's root" : `at ${e.path}`;
    const message = e.reason === "unsupported"
      ? `Invalid schema for ${what}: the keyword '${e.keyword}' ${where} is not supported in strict mode. ` +
        `Supported: type, properties, required, additionalProperties, items, minItems, maxItems, enum, ` +
        `const, anyOf, $ref, $defs, minimum, maximum, exclusiveMinimum, exclusiveMaximum (or set 'strict' ` +
        `to false to have unsupported keywords ignored).`
      : `Invalid schema for ${what}: ${e.message}.`;
    return ApiError.badRequest(message, param, "invalid_json_schema");
  }
  return ApiError.badRequest(
    `Invalid schema for ${what}: ${(e as Error)?.message ?? String(e)}.`,
    param,
    "invalid_json_schema",
  );
}
