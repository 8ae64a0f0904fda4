// Owns the route table and matching: exact paths and `{name}` segments, where a trailing `{name...}`
// captures the rest of the path (model ids contain `/`). An unknown path is 404; a known path with the
// wrong method is 405 with `Allow`.
import { ApiError } from "./errors.ts";

export interface Route<H> {
  method: string;
  path: string;
  handler: H;
  /** Reachable without an API key (health checks). */
  open?: boolean;
  /** The wire format of its errors: OpenAI's envelope unless the route speaks Anthropic's. */
  errors?: "anthropic";
}

export interface Match<H> {
  route: Route<H>;
  params: Record<string, string>;
}

/** A route's path split once: literal segments, `{name}` segments and a trailing `{name...}`. */
type Segment = { literal: string } | { one: string } | { rest: string };

function compile(pattern: string): Segment[] {
  return pattern.split("/").map((seg) => {
    const rest = /^\{(\w+)\.\.\.\}$/.exec(seg);
    if (rest) return { rest: rest[1] };
    const one = /^\{(\w+)\}$/.exec(seg);
    return one ? { one: one[1] } : { literal: seg };
  });
}

function matchPath(pattern: readonly Segment[], sp: readonly string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const seg = pattern[i];
    if ("rest" in seg) {
      const value = sp.slice(i).join("/");
      if (!value) return undefined;
      params[seg.rest] = value;
      return params;
    }
    if (i >= sp.length) return undefined;
    if ("one" in seg) {
      if (!sp[i]) return undefined;
      params[seg.one] = sp[i];
    } else if (seg.literal !== sp[i]) return undefined;
  }
  return pattern.length === sp.length ? params : undefined;
}

function decode(params: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    try {
      out[k] = decodeURIComponent(v);
    } catch {
      throw ApiError.badRequest(`Invalid percent-encoding in the URL path.`, k);
    }
  }
  return out;
}

export class Router<H> {
  /** Each route's path split once (matching ran the patterns' regular expressions on every request). */
  readonly #compiled: Segment[][];

  constructor(readonly routes: Route<H>[]) {
    this.#compiled = routes.map((r) => compile(r.path));
  }

  /** The route for a request, or throws 404 / 405. HEAD is answered by GET routes. */
  match(method: string, pathname: string): Match<H> {
    const path = pathname.length > 1 ? pathname.replace(/\/+$/, "") : pathname;
    const allowed = new Set<string>();
    const sp = path.split("/");
    for (let r = 0; r < this.routes.length; r++) {
      const route = this.routes[r];
      const params = matchPath(this.#compiled[r], sp);
      if (!params) continue;
      if (route.method === method || (method === "HEAD" && route.method === "GET")) {
        return { route, params: decode(params) };
      }
      allowed.add(route.method);
    }
    if (allowed.size) {
      if (allowed.has("GET")) allowed.add("HEAD");
      allowed.add("OPTIONS");
      throw new ApiError({
        status: 405,
        message: `Method ${method} is not allowed for ${path}. Allowed: ${[...allowed].join(", ")}.`,
        code: "method_not_allowed",
        headers: { allow: [...allowed].join(", ") },
      });
    }
    throw ApiError.notFound(`Invalid URL (${method} ${path})`, "unknown_url");
  }

  /** Methods a path accepts (for CORS preflight), empty when the path is unknown. */
  methodsFor(pathname: string): string[] {
    const path = pathname.length > 1 ? pathname.replace(/\/+$/, "") : pathname;
    const sp = path.split("/");
    return this.routes.filter((_, r) => matchPath(this.#compiled[r], sp)).map((r) => r.method);
  }
}
