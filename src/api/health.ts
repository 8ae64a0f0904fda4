// Owns GET /health (liveness: 200 while the process serves) and GET /health/ready (readiness: 200 when every
// configured model is loaded or loadable, 503 while one is loading or failed, with why each failed one did).
// Both are open without a key.
import type { ApiContext } from "./context.ts";

export function handleHealth(): Response {
  return Response.json({ status: "ok" });
}

export function handleReady(_req: Request, ctx: ApiContext): Response {
  const { ready, models, errors } = ctx.registry.readiness();
  return Response.json(
    { status: ready ? "ready" : "not_ready", models, ...(Object.keys(errors).length ? { errors } : {}) },
    { status: ready ? 200 : 503 },
  );
}
