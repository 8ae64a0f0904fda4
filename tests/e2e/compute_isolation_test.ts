// Tests that model compute stays off the HTTP thread: while 8 streaming chats generate on the SmolLM2-135M-
// shaped bench model (q8, 24 tokens each, one after another in the model's queue: about 3 s of compute),
// /health and a small embeddings request still answer promptly; and that a model whose worker dies mid-stream fails the requests
// it held with a clear error (an error frame, a 503 envelope), then loads again and serves the next request.
// With compute on the HTTP thread (before this test existed) /health took 244 to 460 ms here under that load
// and answered 7 times in 2 s; off it, 0 to 3 ms; the thresholds below are generous for that reason, and the
// latency figures themselves are the benchmark's (bench/responsiveness_bench.ts). Also that runners compute at
// a lower CPU priority than the server (--runner-nice), every thread their libraries start included.
import assert from "node:assert/strict";
import { errorOf, GENERATED_MODELS, startTestServer } from "../helpers.ts";
import type { WorkerChatEngine } from "../../src/workers/host.ts";

const JSON_HEADERS = { "content-type": "application/json" };
const FOREVER = { model: "chat-tiny", messages: [{ role: "user", content: "Count forever" }], stream: true };
const BENCH = {
  ...GENERATED_MODELS,
  models: {
    ...GENERATED_MODELS.models,
    smol: {
      task: "chat" as const,
      path: "generated/bench/smollm2-135m-instruct",
      dtype: "q8",
      device: "cpu" as const,
    },
  },
};
const SMOL = {
  model: "smol",
  messages: [{ role: "user", content: "Tell me a story" }],
  stream: true,
  max_tokens: 24,
  ignore_eos: true,
};

/** Each thread of process `pid`: its name and nice value (from /proc). */
function threads(pid: number): { name: string; nice: number }[] {
  return [...Deno.readDirSync(`/proc/${pid}/task`)].flatMap((t) => {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/stat`);
      // "tid (name) state ppid ...": nice is the 17th field after the name.
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      return [{ name, nice: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]) }];
    } catch {
      return []; // a thread that ended meanwhile
    }
  });
}

/** Reads a stream to its end; resolves with its frames. */
async function frames(res: Response): Promise<string[]> {
  return (await res.text()).split("\n\n").filter(Boolean);
}

/** Reads a stream until its first content delta, runs `cut`, reads to the end; the last frame's error. */
async function errorAfterCut(res: Response, cut: () => void): Promise<ReturnType<typeof errorOf>> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes('"delta":{"content":')) text += (await reader.read()).value ?? "";
  cut();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const fs = text.split("\n\n").filter(Boolean);
  assert.equal(fs.at(-1), "data: [DONE]");
  return errorOf(JSON.parse(fs.at(-2)!.slice(6)));
}

Deno.test("compute off the HTTP thread: /health and embeddings answer while 8 chats stream", async () => {
  const t = await startTestServer({ flags: ["--queue-size=16", "--threads=2"], manifest: BENCH });
  try {
    const chat = t.server.registry.resolve("smol", "chat");
    const embed = t.server.registry.resolve("embed-tiny", "embedding");
    await Promise.all([t.server.registry.load(chat), t.server.registry.load(embed)]);
    const streams = Array.from({ length: 8 }, () =>
      fetch(`${t.url}/v1/chat/completions`, {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify(SMOL),
      }).then(frames));
    let settled = false;
    const all = Promise.all(streams).finally(() => settled = true);
    // Wait until generation is under way.
    while (t.server.registry.queues().every((q) => q.active === 0)) {
      await new Promise((r) => setTimeout(r, 5));
    }

    const health: number[] = [];
    const embeddings: number[] = [];
    while (!settled && health.length < 40) {
      let t0 = performance.now();
      const res = await fetch(`${t.url}/health`);
      await res.body?.cancel();
      health.push(performance.now() - t0);
      if (health.length % 8 === 0) {
        t0 = performance.now();
        const e = await t.client.embeddings.create({ model: "embed-tiny", input: "hello world" });
        embeddings.push(performance.now() - t0);
        assert.equal(e.data[0].embedding.length > 0, true);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const results = await all;
    assert.ok(health.length >= 10, `the chats ended before /health could be measured (${health.length})`);
    // Every stream ran to the end of the window.
    for (const f of results) {
      assert.equal(f.at(-1), "data: [DONE]");
      assert.equal(JSON.parse(f.at(-2)!.slice(6)).choices[0].finish_reason, "length");
    }
    const sorted = [...health].sort((a, b) => a - b);
    const p50 = sorted[sorted.length >> 1];
    assert.ok(
      p50 < 50,
      `/health p50 ${p50.toFixed(1)} ms while chats stream (all: ${sorted.map(Math.round)})`,
    );
    assert.ok(sorted.at(-1)! < 250, `/health max ${sorted.at(-1)!.toFixed(1)} ms while chats stream`);
    for (const ms of embeddings) assert.ok(ms < 1000, `an embeddings request took ${ms.toFixed(0)} ms`);
  } finally {
    await t.close();
  }
});

Deno.test("a runner killed mid-stream: an error frame naming why, then it restarts by itself and serves", async () => {
  const t = await startTestServer({ manifest: BENCH });
  try {
    const entry = t.server.registry.resolve("smol", "chat");
    const engine = await t.server.registry.engine<WorkerChatEngine>(entry);
    assert.ok(engine.pid, "a runner process");
    // Long enough to be cut: chat-tiny's whole context streams out before a signal lands.
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ ...SMOL, max_tokens: 1500 }),
    });
    assert.equal(res.status, 200);
    // What the kernel's out-of-memory killer does to a process. (A SIGSEGV sent from outside is caught by
    // V8's WebAssembly trap handler; the abort of a failed assert is runner_crash_test.ts.)
    const err = await errorAfterCut(res, () => Deno.kill(engine.pid!, "SIGKILL"));
    assert.equal(err.code, "engine_failed");
    assert.match(err.message, /smol/);
    assert.match(err.message, /was killed/);

    // Restarted with a backoff, by itself: the next request waits for it and is served.
    const ok = await t.client.chat.completions.create({
      model: "smol",
      messages: [{ role: "user", content: "Hi there!" }],
      max_tokens: 4,
    });
    assert.equal(ok.usage?.completion_tokens, 4);
    const again = await t.server.registry.engine<WorkerChatEngine>(entry);
    assert.notEqual(again.pid, engine.pid);
    assert.ok(t.logs.some((l) => l.includes("model runner crashed; restarting it")), "the restart is logged");
    assert.equal(t.server.registry.crashes().find((c) => c.model === "smol")?.count, 1);
  } finally {
    await t.close();
  }
});

Deno.test("a worker that dies mid-stream: an error frame, a 503 envelope, then the model reloads and serves", async () => {
  const t = await startTestServer();
  try {
    const entry = t.server.registry.resolve("chat-tiny", "chat");
    const engine = await t.server.registry.engine<WorkerChatEngine>(entry);
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify(FOREVER),
    });
    assert.equal(res.status, 200);
    const err = await errorAfterCut(res, () => engine.kill("killed by the test"));
    assert.equal(err.code, "engine_failed");
    assert.match(err.message, /chat-tiny/);
    assert.equal(engine.failed(), true);

    // A request that the dead worker held without streaming: a 503 envelope (what SDKs retry).
    const second = await t.server.registry.engine<WorkerChatEngine>(entry);
    assert.notEqual(second, engine, "a fresh worker was started");
    const pending = fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ ...FOREVER, stream: false }),
    });
    while (!second.busy()) await new Promise((r) => setTimeout(r, 1));
    second.kill("killed by the test");
    const failed = await pending;
    assert.equal(failed.status, 503);
    assert.equal(errorOf(await failed.json()).code, "engine_failed");

    // The model loads again on its next use and serves.
    const ok = await t.client.chat.completions.create({
      model: "chat-tiny",
      messages: [{ role: "user", content: "Hi there!" }],
    });
    assert.equal(ok.choices[0].message.content, "Hello from chat-tiny!");
    assert.ok(t.logs.some((l) => l.includes("model worker failed")), "the failure is logged");
  } finally {
    await t.close();
  }
});

Deno.test({
  name:
    "runners compute at a lower CPU priority than the server (--runner-nice), every model thread included, " +
    "OpenMP's workers sleeping between graphs",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const manifest = {
      ...GENERATED_MODELS,
      models: {
        ...GENERATED_MODELS.models,
        gguf: {
          task: "chat" as const,
          path: "generated/chat-tiny/gguf/chat-tiny-F32.gguf",
          device: "cpu" as const,
        },
      },
    };
    const server = threads(Deno.pid).find((t) => t.name === "deno" || t.name === "main")!.nice;
    for (
      const [flags, lower] of [[["--threads=2"], 5], [["--threads=2", "--runner-nice=3"], 3], [
        ["--threads=2", "--runner-nice=0"],
        0,
      ]] as const
    ) {
      const t = await startTestServer({ flags: [...flags], manifest });
      try {
        for (const id of ["gguf", "chat-tiny"]) {
          const engine = await t.server.registry.engine<WorkerChatEngine>(
            t.server.registry.resolve(id, "chat"),
          );
          // A token through it, so its libraries' thread pools have run.
          await t.client.chat.completions.create({
            model: id,
            messages: [{ role: "user", content: "Hi there!" }],
            max_tokens: 2,
          });
          // The runner's main thread and the threads it started (llama.cpp's and onnxruntime's pools keep its
          // name), not Deno's own threads started before the runner lowered its priority.
          const own = threads(engine.pid!).filter((t) => t.name === "deno");
          assert.ok(own.length >= 2, `${id}: ${JSON.stringify(threads(engine.pid!))}`);
          for (const th of own) assert.equal(th.nice, Math.min(19, server + lower), `${id} ${flags}`);
          // OpenMP's workers (llama.cpp's CPU build) sleep between graphs rather than spin on a core.
          const environ = Deno.readTextFileSync(`/proc/${engine.pid}/environ`).split("\0");
          assert.ok(environ.includes("OMP_WAIT_POLICY=passive"), `${id}: no OMP_WAIT_POLICY=passive`);
        }
      } finally {
        await t.close();
      }
    }
  },
});
