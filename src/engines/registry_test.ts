import assert from "node:assert/strict";
import { memoryLogger } from "../log.ts";
import { parseManifest } from "./manifest.ts";
import { InvalidRequest, ModelFilesMissing, ModelNotFound, ModelUnavailable } from "../errors.ts";
import { Registry } from "./registry.ts";
import type { AnyEngine, EngineLoader, ModelEntry } from "./types.ts";

const manifest = parseManifest(
  {
    defaults: { chat: "c" },
    aliases: { "gpt-4o-mini": "@chat" },
    models: { c: { task: "chat", path: "c" }, e: { task: "embedding", path: "e" } },
  },
  "/models",
  "cpu",
);

function fakeEngine(entry: ModelEntry): AnyEngine {
  return { entry, backend: "fake", dispose: () => Promise.resolve() } as unknown as AnyEngine;
}

function registry(chat: EngineLoader, loadWaitMs = 1000) {
  const log = memoryLogger();
  return new Registry(manifest, { transformers: { chat } }, {
    modelsDir: "/models",
    threads: 1,
    allowRemote: false,
    log,
  }, {
    loadWaitMs,
    queueSize: 2,
  });
}

Deno.test("registry: resolves ids and aliases; unknown is ModelNotFound, wrong task InvalidRequest", () => {
  const r = registry((e) => Promise.resolve(fakeEngine(e)));
  assert.equal(r.resolve("gpt-4o-mini", "chat").id, "c");
  assert.throws(() => r.resolve("nope", "chat"), (e: unknown) => e instanceof ModelNotFound);
  assert.throws(
    () => r.resolve("e", "chat"),
    (e: unknown) => e instanceof InvalidRequest && e.param === "model",
  );
});

Deno.test("registry: one load shared by concurrent requests; state follows", async () => {
  let loads = 0;
  const gate = Promise.withResolvers<void>();
  const r = registry(async (e) => {
    loads++;
    await gate.promise;
    return fakeEngine(e);
  });
  const entry = r.resolve("c", "chat");
  const a = r.engine(entry);
  const b = r.engine(entry);
  assert.equal(r.state("c"), "loading");
  assert.equal(r.readiness().ready, false);
  gate.resolve();
  assert.equal(await a, await b);
  assert.equal(loads, 1);
  assert.equal(r.state("c"), "ready");
});

Deno.test("registry: missing files and failed loads are 503 with the reason; loading past the wait is 503", async () => {
  const missing = registry(() => Promise.reject(new ModelFilesMissing("config.json is missing: run pull")));
  await assert.rejects(missing.engine(missing.resolve("c", "chat")), (e: unknown) => {
    assert.ok(e instanceof ModelUnavailable);
    assert.match(e.message, /config\.json is missing: run pull/);
    return true;
  });
  assert.equal(missing.state("c"), "failed");
  assert.equal(missing.readiness().ready, false);

  const slow = registry(() => new Promise(() => {}), 20);
  await assert.rejects(slow.engine(slow.resolve("c", "chat")), (e: unknown) => {
    assert.ok(e instanceof ModelUnavailable);
    assert.equal(e.code, "model_loading");
    assert.equal(e.retryAfterSeconds, 5);
    return true;
  });
});

Deno.test("registry: idle models unload; the memory budget evicts the least recently used", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/c/onnx`, { recursive: true });
  await Deno.mkdir(`${dir}/d/onnx`, { recursive: true });
  await Deno.writeFile(`${dir}/c/onnx/model.onnx`, new Uint8Array(600));
  await Deno.writeFile(`${dir}/d/onnx/model.onnx`, new Uint8Array(600));
  // Another dtype's file beside it is never loaded, so it never counts (it would pass the budget alone).
  await Deno.writeFile(`${dir}/c/onnx/model_q4.onnx`, new Uint8Array(5000));
  const m = parseManifest(
    { models: { c: { task: "chat", path: "c" }, d: { task: "chat", path: "d" } } },
    dir,
    "cpu",
  );
  const disposed: string[] = [];
  const log = memoryLogger();
  const r = new Registry(
    m,
    {
      transformers: {
        chat: (e) =>
          Promise.resolve({ ...fakeEngine(e), dispose: () => (disposed.push(e.id), Promise.resolve()) }),
      },
    },
    { modelsDir: dir, threads: 1, allowRemote: false, log },
    {
      loadWaitMs: 1000,
      queueSize: 2,
      idleUnloadMs: 60_000,
      memoryBudgetBytes: 1000,
    },
  );
  try {
    await r.engine(r.resolve("c", "chat"));
    assert.equal(r.state("c"), "ready");
    assert.deepEqual(r.memory(), [{ model: "c", bytes: 600, gpuBytes: 0 }], "the fp32 graph only");
    // A running request keeps the model loaded however old its last use.
    const permit = await r.admission.queue("c").acquire();
    await r.unloadIdle(Date.now() + 120_000);
    assert.equal(r.state("c"), "ready");
    permit.release();
    // Loading d (600 B) next to c (600 B) passes the 1000 B budget: c, idle and least recent, goes.
    await r.engine(r.resolve("d", "chat"));
    assert.deepEqual(disposed, ["c"]);
    assert.equal(r.state("c"), "available");
    assert.equal(r.state("d"), "ready");
    await r.unloadIdle(Date.now() + 1000);
    assert.equal(r.state("d"), "ready", "not idle long enough");
    await r.unloadIdle(Date.now() + 120_000);
    assert.equal(r.state("d"), "available");
    assert.deepEqual(disposed, ["c", "d"]);
    // An unloaded model loads again on its next use.
    await r.engine(r.resolve("c", "chat"));
    assert.equal(r.state("c"), "ready");

    // A request holding c (looked up, not yet in its queue slot: decoding audio, tokenizing) keeps it loaded
    // through the budget and the idle sweep, until it releases.
    let release = () => {};
    const held = await r.engine(r.resolve("c", "chat"), undefined, (done) => release = done);
    await r.unloadIdle(Date.now() + 120_000);
    await r.engine(r.resolve("d", "chat"));
    assert.equal(r.state("c"), "ready", "held through the budget and the idle sweep");
    assert.deepEqual(disposed, ["c", "d"]);
    assert.equal(held, await r.engine(r.resolve("c", "chat")));
    release();
    release(); // a second release changes nothing
    await r.unloadIdle(Date.now() + 120_000);
    assert.deepEqual(disposed.sort(), ["c", "c", "d", "d"]);
    // A hold on a load that fails is released with the failure.
    const failing = registry(() => Promise.reject(new Error("bad file")));
    let got = false;
    await assert.rejects(failing.engine(failing.resolve("c", "chat"), undefined, () => got = true));
    assert.equal(got, false);
  } finally {
    await r.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("registry: the budget counts what engines hold now, caches grown since the load included", async () => {
  const held: Record<string, number> = { a: 300, b: 300, c: 300 };
  const m = parseManifest(
    {
      models: {
        a: { task: "chat", path: "a" },
        b: { task: "chat", path: "b" },
        c: { task: "chat", path: "c" },
      },
    },
    "/models",
    "cpu",
  );
  const disposed: string[] = [];
  const chat: EngineLoader = (e) =>
    Promise.resolve({
      ...fakeEngine(e),
      memoryBytes: () => held[e.id],
      dispose: () => (disposed.push(e.id), Promise.resolve()),
    });
  const r = new Registry(m, { transformers: { chat } }, {
    modelsDir: "/models",
    threads: 1,
    allowRemote: false,
    log: memoryLogger(),
  }, {
    loadWaitMs: 1000,
    queueSize: 2,
    memoryBudgetBytes: 1000,
    // Files say 100 each; what the engines report once loaded is what counts.
    estimateBytes: () => Promise.resolve(100),
  });
  try {
    await r.engine(r.resolve("a", "chat"));
    await r.engine(r.resolve("b", "chat"));
    assert.deepEqual(disposed, []);
    // a's KV cache grows (a long conversation kept as the prompt cache): a and b now hold 1100 together, so
    // loading c (estimated 100) first unloads the least recently used, a.
    held.a = 800;
    assert.deepEqual(r.memory(), [{ model: "a", bytes: 800, gpuBytes: 0 }, {
      model: "b",
      bytes: 300,
      gpuBytes: 0,
    }]);
    await r.engine(r.resolve("c", "chat"));
    assert.deepEqual(disposed, ["a"]);
    // An engine that holds more than its estimate once loaded makes room right after its load: a comes back
    // holding 700 next to b (300) and c (300), so b, now the least recently used, goes.
    held.a = 700;
    await r.engine(r.resolve("a", "chat"));
    assert.deepEqual(disposed, ["a", "b"]);
    assert.deepEqual(r.memory(), [{ model: "a", bytes: 700, gpuBytes: 0 }, {
      model: "c",
      bytes: 300,
      gpuBytes: 0,
    }]);
    // A request that grows its model (a whisper state made on first use) brings the total back under the
    // budget when it ends, not only at the next request: c, now least recently used, goes.
    let release = () => {};
    await r.engine(r.resolve("a", "chat"), undefined, (done) => release = done);
    held.a = 800;
    assert.deepEqual(disposed, ["a", "b"], "held, nothing is unloaded for it");
    release();
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual(disposed, ["a", "b", "c"]);
    assert.deepEqual(r.memory(), [{ model: "a", bytes: 800, gpuBytes: 0 }]);
    // A model that alone holds more than the budget stays loaded after its requests (no unload-reload churn).
    held.a = 1500;
    await r.engine(r.resolve("a", "chat"), undefined, (done) => release = done);
    release();
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(r.state("a"), "ready");
    assert.deepEqual(disposed, ["a", "b", "c"]);
  } finally {
    await r.dispose();
  }
});

Deno.test("registry: a hub model that cannot be downloaded says how to get it", async () => {
  const m = parseManifest({ models: { q: { task: "chat", repo: "org/Model" } } }, "/models", "cpu");
  const r = new Registry(m, { transformers: { chat: () => Promise.reject(new TypeError("fetch failed")) } }, {
    modelsDir: "/models",
    threads: 1,
    allowRemote: true,
    log: memoryLogger(),
  }, { loadWaitMs: 1000, queueSize: 1 });
  await assert.rejects(r.engine(r.resolve("q", "chat")), (e: unknown) => {
    assert.ok(e instanceof ModelUnavailable);
    assert.match(e.message, /could not download org\/Model .*fetch failed.*deno task pull q/);
    return true;
  });
});

Deno.test("registry: the GPU memory budget counts what engines hold on the GPU, apart from host memory", async () => {
  const m = parseManifest(
    {
      models: {
        a: { task: "chat", path: "a" },
        b: { task: "chat", path: "b" },
        c: { task: "chat", path: "c" },
      },
    },
    "/models",
    "cpu",
  );
  const gpu: Record<string, number> = { a: 600, b: 600, c: 0 };
  const disposed: string[] = [];
  const chat: EngineLoader = (e) =>
    Promise.resolve({
      ...fakeEngine(e),
      memoryBytes: () => 100,
      placement: () => ({
        device: gpu[e.id] ? "CUDA0 (test)" : "CPU",
        gpuLayers: gpu[e.id] ? 4 : 0,
        layers: 4,
        gpuBytes: gpu[e.id],
      }),
      dispose: () => (disposed.push(e.id), Promise.resolve()),
    });
  const r = new Registry(m, { transformers: { chat } }, {
    modelsDir: "/models",
    threads: 1,
    allowRemote: false,
    log: memoryLogger(),
  }, { loadWaitMs: 1000, queueSize: 2, memoryBudgetBytes: 1000, gpuMemoryBudgetBytes: 1000 });
  try {
    await r.engine(r.resolve("a", "chat"));
    // c lives in host memory only: a stays, both budgets hold.
    await r.engine(r.resolve("c", "chat"));
    assert.deepEqual(disposed, []);
    assert.deepEqual(r.memory().map((x) => [x.model, x.bytes, x.gpuBytes, x.placement?.device]), [
      ["a", 100, 600, "CUDA0 (test)"],
      ["c", 100, 0, "CPU"],
    ]);
    assert.equal(r.placement("a")?.gpuLayers, 4);
    // b's 600 on the GPU next to a's 600 passes the GPU budget (host memory is far from its own): a goes.
    await r.engine(r.resolve("b", "chat"));
    assert.deepEqual(disposed, ["a"]);
    assert.equal(r.state("c"), "ready");
    assert.equal(r.placement("a"), undefined, "not loaded, no placement");
  } finally {
    await r.dispose();
  }
});

Deno.test("registry: a crashed engine restarts after a growing backoff; the third crash within the window fails it", async () => {
  let loads = 0;
  const crash: ((reason: string) => void)[] = [];
  const r = registry((e) => {
    loads++;
    const engine = fakeEngine(e) as AnyEngine & { onFailure(l: (reason: string) => void): void };
    engine.onFailure = (l) => crash.push(l);
    return Promise.resolve(engine);
  });
  const entry = r.resolve("c", "chat");
  const first = await r.engine(entry);
  const t0 = performance.now();
  crash.at(-1)!("its runner aborted: x.cpp:1: GGML_ASSERT(a == b) failed");
  assert.equal(r.state("c"), "loading");
  const second = await r.engine(entry);
  assert.notEqual(second, first);
  assert.ok(performance.now() - t0 >= 450, "the first restart waits its backoff");
  assert.equal(loads, 2);
  const t1 = performance.now();
  crash.at(-1)!("its runner aborted: again");
  await r.engine(entry);
  assert.ok(performance.now() - t1 >= 950, "the second restart waits twice as long");
  crash.at(-1)!("its runner aborted: x.cpp:1: GGML_ASSERT(a == b) failed");
  assert.equal(r.state("c"), "failed");
  assert.equal(loads, 3, "no restart after the third crash");
  assert.match(r.lastError("c")!, /GGML_ASSERT\(a == b\).*crashed 3 times/);
  assert.deepEqual(r.readiness().errors, { c: r.lastError("c") });
  assert.deepEqual(r.crashes().find((c) => c.model === "c"), { model: "c", count: 3 });
  await assert.rejects(
    r.engine(entry),
    (e: unknown) => e instanceof ModelUnavailable && /GGML_ASSERT/.test(e.message),
  );
});
