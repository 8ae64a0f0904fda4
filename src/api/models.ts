// Owns GET /v1/models and GET /v1/models/{id}: the manifest's models in OpenAI's list shape, with extra
// fields (task, state, aliases) that clients ignore. Aliases resolve on retrieve and answer under the name
// asked for, as OpenAI does for its own aliases. A request that carries `anthropic-version` (Anthropic's SDKs
// always send it) gets Anthropic's shape instead: `type: "model"`, `display_name`, `created_at` (RFC 3339),
// and its paging (`limit`, `after_id`, `before_id`; `first_id`, `last_id`, `has_more`).
import type { ModelEntry, Placement } from "../engines/types.ts";
import type { Registry } from "../engines/registry.ts";
import { ApiError } from "../http/errors.ts";
import { AnthropicModelsQuery } from "../protocol/messages.ts";
import { parseRequest } from "../protocol/validate.ts";
import type { ApiContext } from "./context.ts";

const isAnthropic = (req: Request) => req.headers.has("anthropic-version");

function anthropicModel(entry: ModelEntry, id = entry.id) {
  return {
    type: "model",
    id,
    display_name: id,
    created_at: new Date(entry.created * 1000).toISOString().replace(".000Z", "Z"),
  };
}

function anthropicList(req: Request, ctx: ApiContext): Response {
  const query = parseRequest(AnthropicModelsQuery, Object.fromEntries(new URL(req.url).searchParams));
  // Only models the Messages API can run, as Anthropic lists its own.
  let all = ctx.registry.list().filter((e) => e.task === "chat");
  const at = (id: string, param: string) => {
    const i = all.findIndex((e) => e.id === id);
    if (i < 0) throw ApiError.badRequest(`No model with id '${id}' in this list.`, param);
    return i;
  };
  if (query.after_id !== undefined) all = all.slice(at(query.after_id, "after_id") + 1);
  if (query.before_id !== undefined) all = all.slice(0, at(query.before_id, "before_id"));
  const limit = query.limit ?? 20;
  // before_id pages backwards: the `limit` models just before it.
  const page = query.before_id !== undefined && query.after_id === undefined
    ? all.slice(Math.max(0, all.length - limit))
    : all.slice(0, limit);
  const data = page.map((e) => anthropicModel(e));
  return Response.json({
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: page.length < all.length,
  });
}

/** Where a loaded model runs, as extension fields clients ignore (absent until it is loaded). */
function placementFields(p: Placement | undefined) {
  if (!p) return {};
  // Layers are llama.cpp's notion; whisper.cpp runs a model whole on its device.
  const layers = p.layers ? { gpu_layers: p.gpuLayers, layers: p.layers } : {};
  return { device: p.device, ...layers, gpu_memory_bytes: p.gpuBytes };
}

function modelObject(registry: Registry, entry: ModelEntry, id = entry.id) {
  return {
    id,
    object: "model",
    created: entry.created,
    owned_by: entry.ownedBy,
    task: entry.task,
    state: registry.state(entry.id),
    ...(registry.lastError(entry.id) ? { error: registry.lastError(entry.id) } : {}),
    ...placementFields(registry.placement(entry.id)),
    ...(id !== entry.id ? { alias_for: entry.id } : { aliases: registry.aliasesOf(entry.id) }),
  };
}

export function handleListModels(req: Request, ctx: ApiContext): Response {
  if (isAnthropic(req)) return anthropicList(req, ctx);
  const data = ctx.registry.list().map((e) => modelObject(ctx.registry, e));
  return Response.json({ object: "list", data });
}

export function handleRetrieveModel(req: Request, ctx: ApiContext): Response {
  const id = ctx.params.id;
  const entry = ctx.registry.find(id);
  if (!entry) throw ApiError.modelNotFound(id);
  if (isAnthropic(req)) return Response.json(anthropicModel(entry, id));
  return Response.json(modelObject(ctx.registry, entry, id));
}
