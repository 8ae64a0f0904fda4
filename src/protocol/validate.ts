// Owns turning zod validation failures into OpenAI-style 400s: `param` is the field path as OpenAI writes it
// (`messages[0].role`), `code` one of OpenAI's validation codes, the message names the field.
import type { z } from "zod";
import { ApiError } from "../http/errors.ts";

/** `["messages", 0, "role"]` -> `messages[0].role`. */
export function paramPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  if (typeof v === "number") return Number.isInteger(v) ? "an integer" : "a decimal";
  return `a ${typeof v}`;
}

// deno-lint-ignore no-explicit-any
type Issue = z.core.$ZodIssue & { input?: unknown; [k: string]: any };

/** A too_big / too_small issue as OpenAI words it: `Invalid 'n': value above maximum. Expected <= 128, but got 200.` */
function boundError(issue: Issue, name: string, param: string | null, side: "above" | "below"): ApiError {
  const what = issue.origin === "array" ? "array" : issue.origin === "string" ? "string" : "decimal";
  const unit = what === "array" ? " items" : what === "string" ? " characters" : "";
  const limit = side === "above" ? issue.maximum : issue.minimum;
  const op = side === "above"
    ? (issue.inclusive === false ? "<" : "<=")
    : (issue.inclusive === false ? ">" : ">=");
  const got = issue.input !== undefined && typeof issue.input !== "object" ? `, but got ${issue.input}` : "";
  return ApiError.badRequest(
    `Invalid '${name}': ${what === "decimal" ? "value" : "length"} ${side} ${
      side === "above" ? "maximum" : "minimum"
    }. ` +
      `Expected ${op} ${String(limit)}${unit}${got}.`,
    param,
    `${what}_${side}_${side === "above" ? "max" : "min"}_${what === "decimal" ? "value" : "length"}`,
  );
}

export function issueToError(issue: Issue, prefix: readonly PropertyKey[] = []): ApiError {
  const param = paramPath([...prefix, ...issue.path]) || null;
  const name = param ?? "body";
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) {
        return ApiError.badRequest(
          `Missing required parameter: '${name}'.`,
          param,
          "missing_required_parameter",
        );
      }
      return ApiError.badRequest(
        `Invalid type for '${name}': expected ${issue.expected}, but got ${describe(issue.input)} instead.`,
        param,
        "invalid_type",
      );
    case "too_big":
      return boundError(issue, name, param, "above");
    case "too_small":
      return boundError(issue, name, param, "below");
    case "invalid_value":
      return ApiError.badRequest(
        `Invalid value for '${name}': expected one of ${
          (issue.values as unknown[]).map((v) => JSON.stringify(v)).join(", ")
        }.`,
        param,
        "invalid_value",
      );
    case "unrecognized_keys":
      return ApiError.badRequest(
        `Unrecognized request argument supplied: ${(issue.keys as string[]).join(", ")}`,
        paramPath([...prefix, ...issue.path, (issue.keys as string[])[0]]),
        "unknown_parameter",
      );
    case "invalid_union":
      // Report the branch that got furthest when it names a deeper field; else a generic message.
      for (const branch of (issue.errors as Issue[][] | undefined) ?? []) {
        const deep = branch.find((i) => i.path.length > 0 && i.code !== "invalid_type");
        if (deep) return issueToError(deep, [...prefix, ...issue.path]);
      }
      return ApiError.badRequest(`Invalid value for '${name}': ${issue.message}.`, param, "invalid_value");
    default:
      return ApiError.badRequest(`Invalid '${name}': ${issue.message}`, param, "invalid_value");
  }
}

/** Parses `data` with `schema` or throws the 400 for its first issue. */
export function parseRequest<S extends z.ZodType>(schema: S, data: unknown): z.output<S> {
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw ApiError.badRequest(
      `Invalid request body: expected a JSON object, but got ${describe(data)} instead.`,
      null,
      "invalid_type",
    );
  }
  const result = schema.safeParse(data, { reportInput: true });
  if (result.success) return result.data;
  throw issueToError(result.error.issues[0] as Issue);
}
