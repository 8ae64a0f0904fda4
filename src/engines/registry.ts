// Owns the models the server knows: resolving public ids and aliases to manifest entries, loading engines
// lazily (one load at a time per model, shared by concurrent requests) with the loader of the entry's engine
// kind, their state for /v1/models and readiness, and admission (admission.ts: queues, batchers). Load failures become
// ModelUnavailable (503) for that model only. An engine whose compute side died (its runner crashed) is
// dropped and started again after a backoff; after repeated crashes the model is `failed` with the reason.
import {
  EngineFailed,
  InvalidRequest,
  ModelFilesMissing,
  ModelNotFound,
  ModelUnavailable,
} from "../errors.ts";
import type { Manifest } from "./manifest.ts";
import { estimateLoadBytes } from "./footprint.ts";
import { Admission } from "./admission.ts";
import type {
  AnyEngine,
  EngineKind,
  EngineLoader,
  LoadContext,
  ModelEntry,
  Placement,
  Task,
} from "./types.ts";

export type ModelState = "available" | "loading" | "ready" | "failed";

/** The loaders built into a server: per engine kind, per task it serves. */
export type Loaders = Partial<Record<EngineKind, Partial<Record<Task, EngineLoader>>>>;

interface Slot {
  state: ModelState;
  /** Last time a request asked for the engine (ms since epoch). */
  lastUsed: number;
  /** Order of that last request among all (many share a millisecond): least recently used goes first. */
  useOrder: number;
  /**
   * What the model is budgeted at when its engine reports nothing: before the load, the files its engine will
   * read; after it, what the engine held when it was ready.
   */
  sizeBytes: number;
  engine?: AnyEngine;
  loading?: Promise<AnyEngine>;
  error?: string;
  /** A failed model is tried again by a request after this time (ms since epoch). */
  retryAt?: number;
  /** When its compute side died recently (ms since epoch), for the backoff and the crash-loop verdict. */
  crashes: number[];
  /** Crashes since start, for /metrics. */
  crashCount: number;
  /** Requests holding the engine between lookup and the end of their use; a held model is never unloaded. */
  holds: number;
}

/** Messages of failed downloads (fetch, DNS, refused connections), which deserve a how-to-get-it message. */
const NETWORK_FAILURE = /fetch failed|network|dns|ENOTFOUND|ECONNREFUSED|ECONNRESET|EAI_AGAIN|timed? ?out/i;

/** A failed load is retried on a later request after this long, so a fixed file is picked up. */
const RETRY_FAILED_MS = 10_000;
/** A model whose runner died this many times within CRASH_WINDOW_MS is failed, not restarted again... */
const MAX_CRASHES = 3;
const CRASH_WINDOW_MS = 10 * 60_000;
/** ...until this long has passed (a request then tries it once more). */
const CRASH_RETRY_MS = 5 * 60_000;
/** The first restart waits this long, each next one twice as long. */
const RESTART_BACKOFF_MS = 500;

export interface RegistryOptions {
  loadWaitMs: number;
  queueSize: number;
  /** Unload a model unused for this long (0 = never). */
  idleUnloadMs?: number;
  /**
   * Keep the memory the loaded models hold (weights, caches and states, as each engine reports it) under this
   * many bytes by unloading the least recently used idle ones (0 = no limit).
   */
  memoryBudgetBytes?: number;
  /** The same for GPU memory (what engines report in placement().gpuBytes); 0 or absent: no limit. */
  gpuMemoryBudgetBytes?: number;
  /** A model's size before it loads (default: the files its engine will read, see footprint.ts). */
  estimateBytes?: (entry: ModelEntry) => Promise<number>;
}

export class Registry {
  readonly #slots = new Map<string, Slot>();
  /** Queues and batchers of every model: the one admission component. */
  readonly admission: Admission;
  #uses = 0;
  #sweeper?: ReturnType<typeof setInterval>;

  constructor(
    readonly manifest: Manifest,
    readonly loaders: Loaders,
    readonly ctx: LoadContext,
    readonly options: RegistryOptions,
  ) {
    this.admission = new Admission(options.queueSize);
    for (const id of manifest.entries.keys()) {
      this.#slots.set(id, {
        state: "available",
        lastUsed: 0,
        useOrder: 0,
        sizeBytes: 0,
        holds: 0,
        crashes: [],
        crashCount: 0,
      });
    }
    if (options.idleUnloadMs) {
      const every = Math.max(1000, Math.min(60_000, options.idleUnloadMs / 4));
      this.#sweeper = setInterval(() => void this.unloadIdle(), every);
      Deno.unrefTimer(this.#sweeper as unknown as number);
    }
  }

  list(): ModelEntry[] {
    return [...this.manifest.entries.values()];
  }

  state(id: string): ModelState {
    return this.#slots.get(id)?.state ?? "available";
  }

  /** Why a model failed (its load's error, or its runner's last crash), while it is failed. */
  lastError(id: string): string | undefined {
    const slot = this.#slots.get(id);
    return slot?.state === "failed" ? slot.error : undefined;
  }

  /** Times each model's compute side died since start, for /metrics. */
  crashes(): { model: string; count: number }[] {
    return [...this.#slots].map(([model, s]) => ({ model, count: s.crashCount }));
  }

  aliasesOf(id: string): string[] {
    return [...this.manifest.aliases].filter(([, target]) => target === id).map(([alias]) => alias);
  }

  /** Finds a model by id or alias, or returns undefined. */
  find(idOrAlias: string): ModelEntry | undefined {
    const id = this.manifest.aliases.get(idOrAlias) ?? idOrAlias;
    return this.manifest.entries.get(id);
  }

  /**
   * Resolves the `model` of a request for a task: 404 `model_not_found` when unknown, 400 when the model
   * does another task.
   */
  resolve(model: string, task: Task): ModelEntry {
    const entry = this.find(model);
    if (!entry) throw new ModelNotFound(model);
    if (entry.task !== task) {
      throw new InvalidRequest(
        `The model \`${model}\` is a ${entry.task} model and cannot be used for ${task}.`,
        "model",
        "model_not_supported",
      );
    }
    return entry;
  }

  /**
   * The engine for an entry, loading it on first use. Waits for a load in progress up to loadWaitMs. With
   * `hold`, the model is held from this call on (it cannot be unloaded for the memory budget or idleness while
   * the request decodes audio, tokenizes, or waits for its queue slot) and `hold` receives the release, which
   * the caller runs when its use ends. Without a hold, only the queue slot and `busy()` keep it loaded.
   */
  async engine<T extends AnyEngine>(
    entry: ModelEntry,
    signal?: AbortSignal,
    hold?: (release: () => void) => void,
  ): Promise<T> {
    const slot = this.#slots.get(entry.id)!;
    if (!hold) return await this.#engine<T>(entry, slot, signal);
    // Held before the first await: no unload can slip in between the load finishing and this caller's turn.
    slot.holds++;
    let held = true;
    const release = () => {
      if (!held) return;
      slot.holds--;
      held = false;
      // The use may have grown what the model holds (its prompt cache, a new whisper state): the others make
      // room now, not only at the next request. Never this one: a model larger than the budget alone would
      // otherwise be unloaded after every request and loaded again for the next.
      if (slot.state !== "ready") return;
      this.#makeRoom(entry.id, this.#bytes(slot), false).catch((e) =>
        this.ctx.log.warn("unload failed", { error: String(e) })
      );
    };
    try {
      const engine = await this.#engine<T>(entry, slot, signal);
      // What a loaded model holds grows after its load (a prompt cache, a whisper state made on first use):
      // each use brings the others back under the budget. This model, held, is never the one unloaded.
      await this.#makeRoom(entry.id, this.#bytes(slot), false);
      hold(release);
      return engine;
    } catch (e) {
      release();
      throw e;
    }
  }

  async #engine<T extends AnyEngine>(entry: ModelEntry, slot: Slot, signal?: AbortSignal): Promise<T> {
    slot.lastUsed = Date.now();
    slot.useOrder = ++this.#uses;
    this.#dropIfFailed(entry.id, slot);
    if (slot.state === "ready") return slot.engine as T;
    if (slot.state === "failed" && Date.now() < (slot.retryAt ?? 0)) throw this.#unavailable(entry, slot);
    const loading = this.load(entry);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new ModelUnavailable(
            `The model \`${entry.id}\` is still loading. Retry shortly.`,
            "model_loading",
            5,
          ),
        );
      }, this.options.loadWaitMs);
    });
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal!.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      return (await Promise.race([loading, timeout, aborted])) as T;
    } catch (e) {
      if (e instanceof ModelUnavailable || signal?.aborted) throw e;
      throw this.#unavailable(entry, slot);
    } finally {
      clearTimeout(timer);
      // A listener left on a long-lived signal would keep this request's closures alive.
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Starts (or joins) the load of one model. Rejects with the loader's error. */
  load(entry: ModelEntry): Promise<AnyEngine> {
    const slot = this.#slots.get(entry.id)!;
    this.#dropIfFailed(entry.id, slot);
    if (slot.state === "ready") return Promise.resolve(slot.engine!);
    if (slot.loading) return slot.loading;
    return this.#startLoad(entry, slot, 0);
  }

  /** Loads a model after `delayMs` (a restart's backoff); requests meanwhile wait for it as for any load. */
  #startLoad(entry: ModelEntry, slot: Slot, delayMs: number): Promise<AnyEngine> {
    const loader = this.loaders[entry.engine]?.[entry.task];
    slot.state = "loading";
    slot.error = undefined;
    let started = performance.now();
    slot.loading = (async () => {
      if (delayMs > 0) {
        await new Promise((r) => setTimeout(r, delayMs));
        started = performance.now();
      }
      if (!loader) {
        throw new Error(`no ${entry.engine} engine for ${entry.task} models is built into this server`);
      }
      slot.sizeBytes = await (this.options.estimateBytes ?? estimateLoadBytes)(entry);
      await this.#makeRoom(entry.id, slot.sizeBytes);
      const engine = await loader(entry, this.ctx);
      // What it really holds (caches and states included) may pass the estimate: others make room now.
      const held = engine.memoryBytes?.();
      if (held !== undefined && held > slot.sizeBytes) await this.#makeRoom(entry.id, held);
      slot.sizeBytes = held ?? slot.sizeBytes;
      // GPU memory is known only once loaded (the GPU build decides what fits): others give theirs back now.
      const gpu = engine.placement?.()?.gpuBytes ?? 0;
      if (gpu > 0) await this.#makeRoom(entry.id, gpu, true, "gpu");
      return engine;
    })().then(
      (engine) => {
        Object.assign(slot, { state: "ready", engine, loading: undefined, lastUsed: Date.now() });
        engine.onFailure?.((reason) => this.#crashed(entry, slot, engine, reason));
        this.ctx.log.info("model loaded", {
          model: entry.id,
          backend: engine.backend,
          seconds: +((performance.now() - started) / 1000).toFixed(2),
        });
        return engine;
      },
      (err) => {
        let reason = err instanceof Error ? err.message : String(err);
        if (entry.repo && !(err instanceof ModelFilesMissing) && NETWORK_FAILURE.test(reason)) {
          reason = `could not download ${entry.repo} from the Hugging Face hub (${reason}): run ` +
            `\`deno task pull ${entry.id}\` where the hub is reachable, or copy its files to ${entry.path}`;
        }
        slot.loading = undefined;
        // Its runner died while loading (an abort in the native library): restarted like a crash in use, so
        // requests waiting for the load wait for the restart; repeated, the model is failed.
        if (err instanceof EngineFailed) {
          const backoff = this.#crashBackoff(entry, slot, reason);
          if (backoff !== undefined) return this.#startLoad(entry, slot, backoff);
          throw err;
        }
        Object.assign(slot, { state: "failed", error: reason, retryAt: Date.now() + RETRY_FAILED_MS });
        this.ctx.log.error("model failed to load", { model: entry.id, reason });
        throw err;
      },
    );
    // Nobody may be awaiting a preload; the failure is recorded in the slot and logged above.
    slot.loading.catch(() => {});
    return slot.loading;
  }

  /** Starts loading every model (used at start when preload is on). */
  preloadAll(): void {
    for (const entry of this.list()) this.load(entry).catch(() => {});
  }

  /** Ready when no model is loading and every model is ready or at least loadable (not failed). */
  readiness(): { ready: boolean; models: Record<string, ModelState>; errors: Record<string, string> } {
    const models: Record<string, ModelState> = {};
    const errors: Record<string, string> = {};
    let ready = true;
    for (const [id, slot] of this.#slots) {
      models[id] = slot.state;
      if (slot.state === "loading" || slot.state === "failed") ready = false;
      if (slot.state === "failed" && slot.error) errors[id] = slot.error;
    }
    return { ready, models, errors };
  }

  /**
   * What each loaded model holds now (its engine's report, else the estimate) in host memory and GPU memory,
   * and where it runs, for metrics, /v1/models and the budgets.
   */
  memory(): { model: string; bytes: number; gpuBytes: number; rssBytes?: number; placement?: Placement }[] {
    return [...this.#slots].filter(([, s]) => s.state === "ready").map(([model, s]) => {
      const placement = s.engine?.placement?.();
      const rss = s.engine?.rssBytes?.();
      return {
        model,
        bytes: this.#bytes(s),
        gpuBytes: this.#bytes(s, "gpu"),
        ...(rss ? { rssBytes: rss } : {}),
        ...(placement ? { placement } : {}),
      };
    });
  }

  /** Where a loaded model runs (undefined while not loaded, or for an engine that does not say). */
  placement(id: string): Placement | undefined {
    const slot = this.#slots.get(id);
    return slot?.state === "ready" ? slot.engine?.placement?.() : undefined;
  }

  #bytes(slot: Slot, pool: "host" | "gpu" = "host"): number {
    if (pool === "gpu") return slot.engine?.placement?.()?.gpuBytes ?? 0;
    return slot.engine?.memoryBytes?.() ?? slot.sizeBytes;
  }

  /** Requests running and waiting per model, queues and batchers together, for metrics. */
  queues(): { model: string; active: number; waiting: number }[] {
    return this.admission.depths();
  }

  /** Whether a loaded model may be unloaded now: not held, nothing queued or running, the engine not busy. */
  #idle(id: string, slot: Slot): boolean {
    if (slot.state !== "ready" || !slot.engine || slot.holds > 0) return false;
    if (this.admission.busy(id)) return false;
    return !slot.engine.busy?.();
  }

  async #unload(id: string, slot: Slot, why: string): Promise<void> {
    const engine = slot.engine!;
    Object.assign(slot, { state: "available", engine: undefined });
    this.ctx.log.info("model unloaded", { model: id, why });
    await engine.dispose().catch((e) => this.ctx.log.warn("dispose failed", { model: id, error: String(e) }));
  }

  /** Unloads models unused for longer than the idle limit. */
  async unloadIdle(now = Date.now()): Promise<void> {
    const limit = this.options.idleUnloadMs;
    if (!limit) return;
    for (const [id, slot] of this.#slots) {
      if (this.#idle(id, slot) && now - slot.lastUsed >= limit) await this.#unload(id, slot, "idle");
    }
  }

  /**
   * Unloads least-recently-used idle models until `bytes` more fit in the memory budget next to the others.
   * Loaded models count what they hold now (a KV cache grown since their load included); loading ones their
   * estimate. `warn`: log when the busy ones alone pass it (for loads; a request's use would log every time).
   * `pool`: host memory (--memory-budget) or GPU memory (--gpu-memory-budget).
   */
  async #makeRoom(forId: string, bytes: number, warn = true, pool: "host" | "gpu" = "host"): Promise<void> {
    const budget = pool === "gpu" ? this.options.gpuMemoryBudgetBytes : this.options.memoryBudgetBytes;
    if (!budget) return;
    const others = () =>
      [...this.#slots].filter(([id, s]) => id !== forId && (s.state === "ready" || s.state === "loading"));
    const used = () => others().reduce((n, [, s]) => n + this.#bytes(s, pool), 0);
    while (used() + bytes > budget) {
      // Chosen afresh each time: meanwhile a concurrent request may have unloaded one or taken one into use.
      const lru = others().filter(([id, s]) =>
        this.#idle(id, s)
      ).sort((a, b) => a[1].useOrder - b[1].useOrder)[0];
      if (!lru) {
        if (warn) {
          this.ctx.log.warn(
            `${pool === "gpu" ? "GPU " : ""}memory budget exceeded: every loaded model is busy`,
            {
              model: forId,
              budget,
              used: used(),
              bytes,
            },
          );
        }
        return;
      }
      await this.#unload(lru[0], lru[1], pool === "gpu" ? "GPU memory budget" : "memory budget");
    }
  }

  async dispose(): Promise<void> {
    clearInterval(this.#sweeper);
    for (const slot of this.#slots.values()) {
      if (slot.engine) await slot.engine.dispose().catch(() => {});
      slot.engine = undefined;
      slot.state = "available";
    }
  }

  #unavailable(entry: ModelEntry, slot: Slot): ModelUnavailable {
    return new ModelUnavailable(
      `The model \`${entry.id}\` is unavailable: ${slot.error ?? "it failed to load"}`,
      "model_unavailable",
    );
  }

  /** A ready engine's compute side died on its own: it is dropped and started again, or failed if it keeps dying. */
  #crashed(entry: ModelEntry, slot: Slot, engine: AnyEngine, reason: string): void {
    if (slot.engine !== engine) return;
    Object.assign(slot, { state: "available", engine: undefined });
    engine.dispose().catch(() => {});
    const backoff = this.#crashBackoff(entry, slot, reason);
    if (backoff !== undefined) this.#startLoad(entry, slot, backoff).catch(() => {});
  }

  /**
   * Counts a crash: the backoff before the restart, or undefined when the model crashed MAX_CRASHES times
   * within CRASH_WINDOW_MS and is now failed (tried again by a request after CRASH_RETRY_MS).
   */
  #crashBackoff(entry: ModelEntry, slot: Slot, reason: string): number | undefined {
    const now = Date.now();
    slot.crashes = [...slot.crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
    slot.crashCount++;
    if (slot.crashes.length >= MAX_CRASHES) {
      slot.crashes = [];
      Object.assign(slot, {
        state: "failed",
        error: `${reason} (it crashed ${MAX_CRASHES} times within ${CRASH_WINDOW_MS / 60_000} minutes; ` +
          `it is tried again in ${CRASH_RETRY_MS / 60_000} minutes)`,
        retryAt: now + CRASH_RETRY_MS,
      });
      this.ctx.log.error("model failed: its runner keeps crashing", { model: entry.id, reason });
      return undefined;
    }
    const backoff = RESTART_BACKOFF_MS * 2 ** (slot.crashes.length - 1);
    this.ctx.log.warn("model runner crashed; restarting it", { model: entry.id, reason, backoffMs: backoff });
    return backoff;
  }

  /**
   * A ready engine whose compute side died (a crashed worker) is dropped, so the next use loads it again;
   * the requests it held have already failed with EngineFailed.
   */
  #dropIfFailed(id: string, slot: Slot): void {
    if (slot.state !== "ready" || !slot.engine?.failed?.()) return;
    const engine = slot.engine;
    Object.assign(slot, { state: "available", engine: undefined });
    this.ctx.log.warn("model dropped after its compute side failed; it loads again now", { model: id });
    engine.dispose().catch(() => {});
  }
}
