// Owns GET /v1/models and GET /v1/models/{id}: the manifest's models in OpenAI's list shape, with extra
// fields (task, state, aliases) that clients ignore. Aliases resolve on retrieve and answer under the name
// asked for, as OpenAI does for its own aliases.
import type { ModelEntry } from "../engines/types.ts";
import type { Registry } from "../engines/registry.ts";
import { ApiError } from "../http/errors.ts";
import type { ApiContext } from "./context.ts";

function modelObject(registry: Registry, entry: ModelEntry, id = entry.id) {
  return {
    id,
    object: "model",
    created: entry.created,
    owned_by: entry.ownedBy,
    task: entry.task,
    state: registry.state(entry.id),
    ...(id !== entry.id ? { alias_for: entry.id } : { aliases: registry.aliasesOf(entry.id) }),
  };
}

export function handleListModels(_req: Request, ctx: ApiContext): Response {
  const data = ctx.registry.list().map((e) => modelObject(ctx.registry, e));
  return Response.json({ object: "list", data });
}

export function handleRetrieveModel(_req: Request, ctx: ApiContext): Response {
  const id = ctx.params.id;
  const entry = ctx.registry.find(id);
  if (!entry) throw ApiError.modelNotFound(id);
  return Response.json(modelObject(ctx.registry, entry, id));
}
