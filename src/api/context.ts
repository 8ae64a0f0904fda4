// Owns what every API handler receives: the config, the model registry, the logger, the request's identity
// and cancellation signal, and `note` for fields that end up in the request's log line and metrics.
import type { Config } from "../config.ts";
import type { Registry } from "../engines/registry.ts";
import type { Logger } from "../log.ts";
import type { BodyLimits } from "../http/body.ts";
import type { Metrics } from "../metrics.ts";
import type { ResponseStore } from "../store/mod.ts";

import type { RequestNote } from "../request_record.ts";

export type { RequestNote };

export interface ApiContext {
  config: Config;
  registry: Registry;
  /** Stored responses; null when storing is off (--store-url=none). */
  store: ResponseStore | null;
  log: Logger;
  requestId: string;
  /** Aborted when the client disconnects, the request times out, or the server is forced down. */
  signal: AbortSignal;
  /** Path parameters of the matched route. */
  params: Record<string, string>;
  note(fields: RequestNote): void;
  /** Request fields that were accepted but had no effect (sent back in X-Ignored-Params). */
  ignore(params: string[]): void;
  /** Runs `fn` once the request is over: its response fully sent, the client gone, or an error answered. */
  defer(fn: () => void): void;
  jsonLimits: BodyLimits;
  audioLimits: BodyLimits;
  metrics: Metrics;
}

export type Handler = (req: Request, ctx: ApiContext) => Response | Promise<Response>;
