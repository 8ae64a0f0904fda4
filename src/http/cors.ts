// Owns CORS: which origins may call the API from a browser, the headers added to every response for them,
// and answers to preflight OPTIONS requests.

export class Cors {
  readonly #any: boolean;
  readonly #origins: Set<string>;

  constructor(origins: string[]) {
    this.#any = origins.includes("*");
    this.#origins = new Set(origins.filter((o) => o !== "*").map((o) => o.replace(/\/+$/, "")));
  }

  get enabled(): boolean {
    return this.#any || this.#origins.size > 0;
  }

  allowed(origin: string | null): boolean {
    return origin !== null && (this.#any || this.#origins.has(origin));
  }

  /** Headers for a normal response to `origin` (none when it is not allowed). */
  headers(origin: string | null): Record<string, string> {
    if (!this.allowed(origin)) return {};
    return {
      "access-control-allow-origin": this.#any ? "*" : origin!,
      "access-control-expose-headers": "x-request-id, retry-after, x-ignored-params",
      ...(this.#any ? {} : { vary: "Origin" }),
    };
  }

  isPreflight(req: Request): boolean {
    return req.method === "OPTIONS" && req.headers.has("access-control-request-method");
  }

  /** 204 for an allowed preflight; 403 when the origin is not allowed. */
  preflight(req: Request, methods: string[]): Response {
    const origin = req.headers.get("origin");
    if (!this.allowed(origin)) return new Response(null, { status: 403 });
    const requested = req.headers.get("access-control-request-headers");
    return new Response(null, {
      status: 204,
      headers: {
        ...this.headers(origin),
        "access-control-allow-methods": [...new Set([...methods, "OPTIONS"])].join(", "),
        "access-control-allow-headers": requested ?? "authorization, content-type, x-strict",
        "access-control-max-age": "600",
      },
    });
  }
}
