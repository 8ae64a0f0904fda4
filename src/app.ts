// Owns the request pipeline and its one error boundary: request id, CORS, routing, auth, the request's
// cancellation signal (client disconnect, timeout, forced shutdown), and one log line per request when its
// response has been made (a streamed body: when it has finished; /health probes: at debug level only).
// Anything thrown by a handler becomes OpenAI's envelope here.
import type { Config } from "./config.ts";
import type { Registry } from "./engines/registry.ts";
import type { Logger } from "./log.ts";
import type { ResponseStore } from "./store/mod.ts";
import type { ApiContext, Handler } from "./api/context.ts";
import type { RequestNote, RequestRecord } from "./request_record.ts";
import { handleHealth, handleReady } from "./api/health.ts";
import { RequestSignal } from "./http/request_signal.ts";
import { handleListModels, handleRetrieveModel } from "./api/models.ts";
import { handleChatCompletions } from "./api/chat.ts";
import { handleCompletions } from "./api/completions.ts";
import {
  handleCreateResponse,
  handleDeleteResponse,
  handleGetResponse,
  handleInputTokens,
  handleListInputItems,
} from "./api/responses.ts";
import { handleEmbeddings } from "./api/embeddings.ts";
import { handleTranscriptions, handleTranslations } from "./api/transcriptions.ts";
import { ApiKeys } from "./http/auth.ts";
import { Cors } from "./http/cors.ts";
import { errorResponse, toApiError, withRequestId } from "./http/errors.ts";
import { anthropicErrorResponse } from "./http/anthropic_errors.ts";
import { onStreamEnd } from "./http/sse.ts";
import { handleCountTokens, handleCreateMessage } from "./api/messages.ts";
import { type Route, Router } from "./http/router.ts";
import { Metrics } from "./metrics.ts";

export const ROUTES: Route<Handler>[] = [
  { method: "POST", path: "/v1/chat/completions", handler: handleChatCompletions },
  { method: "POST", path: "/v1/completions", handler: handleCompletions },
  { method: "POST", path: "/v1/responses", handler: handleCreateResponse },
  { method: "POST", path: "/v1/responses/input_tokens", handler: handleInputTokens },
  { method: "GET", path: "/v1/responses/{id}", handler: handleGetResponse },
  { method: "DELETE", path: "/v1/responses/{id}", handler: handleDeleteResponse },
  { method: "GET", path: "/v1/responses/{id}/input_items", handler: handleListInputItems },
  { method: "POST", path: "/v1/messages", handler: handleCreateMessage, errors: "anthropic" },
  { method: "POST", path: "/v1/messages/count_tokens", handler: handleCountTokens, errors: "anthropic" },
  { method: "POST", path: "/v1/embeddings", handler: handleEmbeddings },
  { method: "POST", path: "/v1/audio/transcriptions", handler: handleTranscriptions },
  { method: "POST", path: "/v1/audio/translations", handler: handleTranslations },
  { method: "GET", path: "/v1/models", handler: handleListModels },
  { method: "GET", path: "/v1/models/{id...}", handler: handleRetrieveModel },
  { method: "GET", path: "/metrics", handler: (_req, ctx) => ctx.metrics.render() },
  { method: "GET", path: "/health", handler: handleHealth, open: true },
  { method: "GET", path: "/health/ready", handler: handleReady, open: true },
];

export type { RequestRecord };

export interface AppDeps {
  config: Config;
  registry: Registry;
  /** Stored responses (POST /v1/responses with store); null when storing is off. */
  store?: ResponseStore | null;
  log: Logger;
  routes?: Route<Handler>[];
  /** Aborted to cut every in-flight request (forced shutdown). */
  shutdownSignal?: AbortSignal;
  onRequestDone?: (rec: RequestRecord) => void;
  metrics?: Metrics;
}

export type App = (req: Request) => Promise<Response>;

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

export function createApp(deps: AppDeps): App {
  const { config, registry, log } = deps;
  const router = new Router(deps.routes ?? ROUTES);
  const cors = new Cors(config.corsOrigins);
  const keys = new ApiKeys(config.apiKeys);
  const jsonLimits = { maxBytes: config.jsonBodyBytes, timeoutMs: config.bodyTimeoutMs };
  const audioLimits = { maxBytes: config.audioBodyBytes, timeoutMs: config.bodyTimeoutMs };
  const metrics = deps.metrics ?? new Metrics(registry);

  return async (req: Request): Promise<Response> => {
    const started = performance.now();
    const url = new URL(req.url);
    const given = req.headers.get("x-request-id");
    const requestId = given && REQUEST_ID.test(given)
      ? given
      : `req_${crypto.randomUUID().replaceAll("-", "")}`;
    const origin = req.headers.get("origin");
    const note: RequestNote = {};
    const deferred: (() => void)[] = [];
    const ignored: string[] = [];
    let routePath = "unmatched";
    let errorFormat: Route<Handler>["errors"];

    const signal = new RequestSignal(
      deps.shutdownSignal ? [req.signal, deps.shutdownSignal] : [req.signal],
      config.requestTimeoutMs,
    );

    let res: Response;
    try {
      if (cors.isPreflight(req)) {
        res = cors.preflight(req, router.methodsFor(url.pathname));
      } else {
        const { route, params } = router.match(req.method, url.pathname);
        routePath = route.path;
        errorFormat = route.errors;
        if (!route.open) await keys.check(req);
        const ctx: ApiContext = {
          config,
          registry,
          store: deps.store ?? null,
          log,
          requestId,
          get signal() {
            return signal.signal;
          },
          params,
          note: (f) => Object.assign(note, f),
          ignore: (params) => ignored.push(...params),
          defer: (fn) => deferred.push(fn),
          jsonLimits,
          audioLimits,
          metrics,
        };
        res = await route.handler(req, ctx);
      }
    } catch (err) {
      let api = toApiError(err);
      if (api.status >= 500) {
        // The whole cause (paths, internals) goes to the log; the client's message names where to find it.
        const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
        if (api.status === 503) log.warn("request failed", { requestId, error: String(err) });
        else log.error("request failed", { requestId, error });
        api = withRequestId(api, requestId);
      }
      res = errorFormat === "anthropic" ? anthropicErrorResponse(api, requestId) : errorResponse(api);
    }

    const finish = () => {
      signal.end();
      for (const fn of deferred.splice(0)) fn();
      const rec: RequestRecord = {
        method: req.method,
        path: url.pathname,
        route: routePath,
        status: res.status,
        seconds: +((performance.now() - started) / 1000).toFixed(4),
        requestId,
        ...note,
      };
      // Liveness and readiness probes (an orchestrator's every few seconds, a load balancer's more often) would
      // bury the requests people read the log for; llama-server leaves them out of its log too.
      if (routePath === "/health" || routePath === "/health/ready") log.debug("request", { ...rec });
      else log.info("request", { ...rec });
      metrics.record(rec);
      deps.onRequestDone?.(rec);
    };

    // The response goes out as the handler made it, with the pipeline's headers set on it: reading `res.body`
    // turns a whole body (JSON, text) into a stream, which a wrapper here then pumped through JavaScript a
    // chunk at a time (a /health cost the serving thread ~0.1 ms more, on the cores the model decodes on).
    res.headers.set("x-request-id", requestId);
    if (ignored.length > 0) res.headers.set("x-ignored-params", ignored.join(", "));
    for (const [k, v] of Object.entries(cors.headers(origin))) res.headers.set(k, v);
    if (req.method === "HEAD") {
      finish();
      return new Response(null, { status: res.status, statusText: res.statusText, headers: res.headers });
    }
    // An event stream (sse.ts, the only bodies that are not whole) is logged when it has been sent or its client
    // went away, so that streamed token counts are known; any other response is logged now.
    if (res.headers.get("content-type")?.startsWith("text/event-stream") && res.body) {
      let logged = false;
      const once = () => {
        if (!logged) {
          logged = true;
          finish();
        }
      };
      if (onStreamEnd(res.body, once)) {
        req.signal.addEventListener("abort", once, { once: true });
        return res;
      }
    }
    finish();
    return res;
  };
}
