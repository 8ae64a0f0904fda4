// Owns the server's lifetime: loading the manifest, building the registry and app, serving with Deno.serve,
// and graceful shutdown (stop accepting, let in-flight requests finish up to a deadline, then cut them).
import type { Config } from "./config.ts";
import { createApp, type RequestRecord } from "./app.ts";
import { loadManifest } from "./engines/manifest.ts";
import { type Loaders, Registry } from "./engines/registry.ts";
import { llamaLibFor } from "./engines/llama/variants.ts";
import type { Logger } from "./log.ts";
import { openStore } from "./store/mod.ts";
import { join, resolve } from "node:path";

export interface ServerDeps {
  loaders: Loaders;
  log: Logger;
  onRequestDone?: (rec: RequestRecord) => void;
}

export interface RunningServer {
  port: number;
  hostname: string;
  url: string;
  registry: Registry;
  /** Graceful stop; resolves when the server has closed. */
  shutdown(): Promise<void>;
  finished: Promise<void>;
}

/**
 * Mesa's Vulkan drivers, probed for a WebGPU adapter, print "XDG_RUNTIME_DIR is invalid or not set" when a
 * service runs without a login session; a private folder in the data folder gives them one, and nothing else
 * here reads it.
 */
async function ensureRuntimeDir(dataDir: string): Promise<void> {
  if (Deno.env.get("XDG_RUNTIME_DIR")) return;
  const dir = join(resolve(dataDir), "run");
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    Deno.env.set("XDG_RUNTIME_DIR", dir);
  } catch {
    // A read-only data folder only costs the warning.
  }
}

export async function startServer(config: Config, deps: ServerDeps): Promise<RunningServer> {
  const { log } = deps;
  await ensureRuntimeDir(config.dataDir);
  const manifest = await loadManifest(config.manifest, config.modelsDir, config.device);
  const registry = new Registry(
    manifest,
    deps.loaders,
    {
      modelsDir: config.modelsDir,
      threads: config.threads,
      allowRemote: !config.offline,
      log,
      parallel: config.parallel,
      llamaLib: config.llamaLib || llamaLibFor(config.llamaVariant),
      gpuLayers: config.gpuLayers,
    },
    {
      loadWaitMs: config.loadWaitMs,
      queueSize: config.queueSize,
      idleUnloadMs: config.idleUnloadSeconds * 1000,
      memoryBudgetBytes: config.memoryBudgetBytes,
      gpuMemoryBudgetBytes: config.gpuMemoryBudgetBytes,
    },
  );
  const store = await openStore(config);
  if (store) log.info("response store", { store: store.description });
  const force = new AbortController();
  const app = createApp({
    config,
    registry,
    store,
    log,
    shutdownSignal: force.signal,
    onRequestDone: deps.onRequestDone,
  });

  const { promise: listening, resolve: onListen } = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname: config.host,
    port: config.port,
    onListen: (addr) => onListen(addr as Deno.NetAddr),
    onError: (err) => {
      // Only reachable if the app's own boundary failed; never echo the cause.
      log.error("unhandled error", { error: String(err) });
      return Response.json({
        error: { message: "The server had an error.", type: "server_error", param: null, code: null },
      }, { status: 500 });
    },
  }, app);
  const addr = await listening;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  log.info("listening", { url: `http://${host}:${addr.port}`, models: manifest.entries.size });
  if (config.preload) registry.preloadAll();

  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= (async () => {
      log.info("shutting down", { deadlineMs: config.shutdownTimeoutMs });
      const timer = setTimeout(() => {
        log.warn("shutdown deadline passed; cutting in-flight requests");
        force.abort(new DOMException("server shutting down", "AbortError"));
      }, config.shutdownTimeoutMs);
      try {
        await server.shutdown();
      } finally {
        clearTimeout(timer);
        await registry.dispose();
        await store?.close().catch(() => {});
      }
      log.info("stopped");
    })();
    return stopping;
  };

  return {
    port: addr.port,
    hostname: addr.hostname,
    url: `http://${host}:${addr.port}`,
    registry,
    shutdown,
    finished: server.finished,
  };
}
