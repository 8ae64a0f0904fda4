// Owns the Prometheus metrics: requests by route and status, latency and time-to-first-token histograms,
// tokens processed, queue depth and batching (the registry's admission), model states, crashes and memory (read
// from the registry when scraped). Fed by the app's
// per-request record, so handlers never touch metrics directly.
import client from "prom-client";
import type { RequestRecord } from "./request_record.ts";
import type { Registry } from "./engines/registry.ts";

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class Metrics {
  readonly #reg = new client.Registry();
  readonly #requests = new client.Counter({
    name: "oai_requests_total",
    help: "HTTP requests by route, method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers: [this.#reg],
  });
  readonly #latency = new client.Histogram({
    name: "oai_request_duration_seconds",
    help: "Time from request to the end of the response body, by route.",
    labelNames: ["route"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.#reg],
  });
  readonly #ttft = new client.Histogram({
    name: "oai_time_to_first_token_seconds",
    help: "Time from request to the first generated token (streaming chat), by model.",
    labelNames: ["model"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.#reg],
  });
  readonly #tokens = new client.Counter({
    name: "oai_tokens_total",
    help: "Tokens processed, by model and kind (prompt or completion).",
    labelNames: ["model", "kind"] as const,
    registers: [this.#reg],
  });

  constructor(registry: Registry) {
    const batches = () => registry.admission.batches();
    const queue = new client.Gauge({
      name: "oai_queue_depth",
      help: "Requests per model, running (active) or waiting in its queue.",
      labelNames: ["model", "state"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const q of registry.admission.depths()) {
          this.set({ model: q.model, state: "active" }, q.active);
          this.set({ model: q.model, state: "waiting" }, q.waiting);
        }
      },
    });
    new client.Counter({
      name: "oai_batches_total",
      help: "Batched model calls run (embeddings), by model.",
      labelNames: ["model"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const b of batches()) this.inc({ model: b.model }, b.stats.batches);
      },
    });
    new client.Counter({
      name: "oai_batch_inputs_total",
      help:
        "Inputs run in batched model calls, by model (divide by oai_batches_total for the mean batch size).",
      labelNames: ["model"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const b of batches()) this.inc({ model: b.model }, b.stats.inputs);
      },
    });
    new client.Gauge({
      name: "oai_model_loaded",
      help: "1 when the model is loaded and ready, else 0; the state label says why.",
      labelNames: ["model", "task", "state"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const e of registry.list()) {
          const state = registry.state(e.id);
          this.set({ model: e.id, task: e.task, state }, state === "ready" ? 1 : 0);
        }
      },
    });
    new client.Gauge({
      name: "oai_model_failed",
      help:
        "1 for a model that failed (its load, or its runner crashing again and again); the reason label " +
        "says why.",
      labelNames: ["model", "reason"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const e of registry.list()) {
          const reason = registry.lastError(e.id);
          if (reason) this.set({ model: e.id, reason: reason.slice(0, 200) }, 1);
        }
      },
    });
    new client.Counter({
      name: "oai_model_crashes_total",
      help: "Times a model's runner process died on its own (abort, segfault, killed) since start.",
      labelNames: ["model"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const c of registry.crashes()) this.inc({ model: c.model }, c.count);
      },
    });
    new client.Gauge({
      name: "oai_runner_memory_bytes",
      help: "Resident memory of a loaded model's runner process (the process boundary's cost included).",
      labelNames: ["model"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const m of registry.memory()) if (m.rssBytes) this.set({ model: m.model }, m.rssBytes);
      },
    });
    new client.Gauge({
      name: "oai_model_memory_bytes",
      help: "Bytes a loaded model holds: its weights as loaded plus its caches and states (what " +
        "--memory-budget counts).",
      labelNames: ["model"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const m of registry.memory()) this.set({ model: m.model }, m.bytes);
      },
    });
    new client.Gauge({
      name: "oai_model_gpu_memory_bytes",
      help: "Bytes a loaded model holds in GPU memory: weights, KV cache and compute buffers (what " +
        "--gpu-memory-budget counts); its device in the label.",
      labelNames: ["model", "device"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const m of registry.memory()) {
          if (m.placement) this.set({ model: m.model, device: m.placement.device }, m.gpuBytes);
        }
      },
    });
    new client.Gauge({
      name: "oai_model_gpu_layers",
      help: "Layers of a loaded GGUF model in GPU memory (llama.cpp counts the output layer as one); " +
        "oai_model_layers has the model's total.",
      labelNames: ["model"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const m of registry.memory()) {
          if (m.placement) this.set({ model: m.model }, m.placement.gpuLayers);
        }
      },
    });
    new client.Gauge({
      name: "oai_model_layers",
      help: "Layers of a loaded GGUF model in all, as llama.cpp counts them for offloading.",
      labelNames: ["model"] as const,
      registers: [this.#reg],
      collect() {
        this.reset();
        for (const m of registry.memory()) {
          if (m.placement?.layers) this.set({ model: m.model }, m.placement.layers);
        }
      },
    });
    void queue;
  }

  /** Records one finished request (called by the app once its body is sent). */
  record(rec: RequestRecord): void {
    this.#requests.inc({ route: rec.route, method: rec.method, status: String(rec.status) });
    this.#latency.observe({ route: rec.route }, rec.seconds);
    if (rec.model) {
      if (rec.ttft !== undefined) this.#ttft.observe({ model: rec.model }, rec.ttft);
      if (rec.promptTokens) this.#tokens.inc({ model: rec.model, kind: "prompt" }, rec.promptTokens);
      if (rec.completionTokens) {
        this.#tokens.inc({ model: rec.model, kind: "completion" }, rec.completionTokens);
      }
    }
  }

  async render(): Promise<Response> {
    return new Response(await this.#reg.metrics(), { headers: { "content-type": this.#reg.contentType } });
  }
}
