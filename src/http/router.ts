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

function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const pp = pattern.split("/");
  const sp = path.split("/");
  const params: Record<string, string> = {};
  for (let i = 0; i < pp.length; i++) {
    const seg = pp[i];
    const rest = /^\{(\w+)\.\.\.\}$/.exec(seg);
    if (rest) {
      const value = sp.slice(i).join("/");
      if (!value) return undefined;
      params[rest[1]] = value;
      return params;
    }
    if (i >= sp.length) return undefined;
    const one = /^\{(\w+)\}$/.exec(seg);
    if (one) {
      if (!sp[i]) return undefined;
      params[one[1]] = sp[i];
    } else if (seg !== sp[i]) return undefined;
  }
  return pp.length === sp.length ? params : undefined;
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
  constructor(readonly routes: Route<H>[]) {}

  /** The route for a request, or throws 404 / 405. HEAD is answered by GET routes. */
  match(method: string, pathname: string): Match<H> {
    const path = pathname.length > 1 ? pathname.replace(/\/+$/, "") : pathname;
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const params = matchPath(route.path, path);
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
    return this.routes.filter((r) => matchPath(r.path, path)).map((r) => r.method);
  }
}
