// Owns the rule that no request field is dropped silently (issue 15): per route, the fields its handler acts
// on; every other field a request carries (with a non-null value) was accepted but had no effect. Those are
// listed in the response's `X-Ignored-Params` header, or, with `--strict` or the request header
// `X-Strict: true`, refused with a 400 naming the first of them. A few fields count as honoured when their
// value asks for exactly what the server does anyway (`modalities: ["text"]`, `store: false`).
import { ApiError } from "../http/errors.ts";
import type { ApiContext } from "./context.ts";

export interface FieldPolicy {
  /** Top-level fields the handler acts on. */
  honoured: ReadonlySet<string>;
  /** Fields that are honoured only with these values (any other value is ignored). */
  neutral?: Readonly<Record<string, (v: unknown) => boolean>>;
  /** Nested fields the handler does not act on, as `parent.child` paths, found in the body. */
  nested?: (body: Record<string, unknown>) => string[];
}

/** The fields of `body` that `policy` does not act on, in body order. */
export function ignoredParams(body: Record<string, unknown>, policy: FieldPolicy): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined || policy.honoured.has(key)) continue;
    if (policy.neutral?.[key]?.(value)) continue;
    out.push(key);
  }
  return [...out, ...(policy.nested?.(body) ?? [])];
}

/** Whether this request is held to --strict: the server's flag, or the request's own `X-Strict` header. */
function strict(req: Request, ctx: ApiContext): boolean {
  const h = req.headers.get("x-strict")?.trim().toLowerCase();
  return h === undefined ? ctx.config.strict : h === "true" || h === "1";
}

/** Reports what `body` carries that the route ignores: a 400 in strict mode, else the response header. */
export function reportIgnored(
  req: Request,
  ctx: ApiContext,
  body: Record<string, unknown>,
  policy: FieldPolicy,
): void {
  reportFields(req, ctx, ignoredParams(body, policy));
}

/** Reports fields the route found it cannot act on for this request (e.g. `store: true` with no store). */
export function reportFields(req: Request, ctx: ApiContext, ignored: string[]): void {
  if (ignored.length === 0) return;
  if (strict(req, ctx)) {
    throw ApiError.badRequest(
      `'${ignored[0]}' is accepted but has no effect on this server, and strict mode refuses such fields ` +
        `(send X-Strict: false, or leave the field out).`,
      ignored[0],
      "unsupported_parameter",
    );
  }
  ctx.ignore(ignored);
}

/** Field predicates shared by the routes' policies. */
export const only = {
  textModalities: (v: unknown) => Array.isArray(v) && v.every((m) => m === "text"),
  isFalse: (v: unknown) => v === false,
};
