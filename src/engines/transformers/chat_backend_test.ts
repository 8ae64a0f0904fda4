// Runs the real chat engine on the generated chat-tiny model (models/generated/chat-tiny): model files
// (missing, offline, downloaded from a hub into <models>/hub/<repo>), the generation loop's events, n choices
// from one prefill, seeds, stop sequences, logprobs, cancellation between tokens, and the plug-in points.
import assert from "node:assert/strict";
import { join } from "node:path";
import { memoryLogger } from "../../log.ts";
import { ModelFilesMissing } from "../../errors.ts";
import type { ChatEvent, ChatGenerateOptions, LoadContext, ModelEntry } from "../types.ts";
import { loadChat, type TransformersChat } from "./chat_engine.ts";
import { downloadProgress, requiredChatFiles } from "./chat_files.ts";
import { transformersRuntime } from "./runtime.ts";
import { startFakeHub } from "../../../tests/fake_hub.ts";

const MODELS = new URL("../../../models/", import.meta.url).pathname;
const TINY = join(MODELS, "generated", "chat-tiny");
const HELLO = "Hello from chat-tiny!";

function entry(path: string, extra: Partial<ModelEntry> = {}): ModelEntry {
  return {
    id: "chat-tiny",
    task: "chat",
    path,
    dtype: "fp32",
    device: "cpu",
    options: {},
    created: 0,
    ownedBy: "t",
    ...extra,
  };
}

const ctx = (allowRemote = false, modelsDir = MODELS): LoadContext => ({
  modelsDir,
  threads: 1,
  allowRemote,
  log: memoryLogger(),
});

const options = (extra: Partial<ChatGenerateOptions> = {}): ChatGenerateOptions => ({
  n: 1,
  maxTokens: 32,
  minTokens: 0,
  ignoreEos: false,
  stop: [],
  sampling: {
    temperature: 0,
    topP: 1,
    topK: 0,
    presencePenalty: 0,
    frequencyPenalty: 0,
    logitBias: new Map(),
  },
  seed: 1n,
  logprobs: null,
  ...extra,
});

async function collect(it: AsyncIterable<ChatEvent>): Promise<ChatEvent[]> {
  const out: ChatEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

function texts(events: ChatEvent[]): string[] {
  const out: string[] = [];
  for (const ev of events) {
    if (ev.type === "start") out[ev.choice] = "";
    if (ev.type === "delta") out[ev.choice] += ev.delta.content ?? "";
  }
  return out;
}

let shared: TransformersChat | undefined;
async function engine(): Promise<TransformersChat> {
  return shared ??= await loadChat(entry(TINY), ctx());
}

const hi = [{ role: "user" as const, content: "Hi there!" }];

Deno.test("chat engine: loads chat-tiny, reports its window and defaults, greedy reply with events in order", async () => {
  const e = await engine();
  assert.equal(e.contextLength, 1024);
  assert.equal(e.vocabSize, 1170);
  assert.deepEqual(e.defaults, { temperature: 0, topP: 1, topK: 0 });
  assert.match(e.backend, /^cpu via onnxruntime-node fp32$/);
  assert.deepEqual([...e.eosIds].sort(), [1163, 1165]);
  assert.match(e.chatTemplate ?? "", /<tool_call>/);
  assert.ok((e.tokenizerJson as { model?: unknown }).model);
  const events = await collect(e.generate(e.prompt(hi), options()));
  assert.deepEqual(events[0], { type: "start", choice: 0 });
  assert.deepEqual(events.at(-1), { type: "finish", choice: 0, reason: "stop", completionTokens: 6 });
  assert.deepEqual(texts(events), [HELLO]);
  assert.ok(events.filter((ev) => ev.type === "delta").length >= 5, "one delta per token");
});

Deno.test("chat engine: n choices from one prefill, each with its own seed stream; seeds reproduce", async () => {
  const e = await engine();
  const p = e.prompt(hi);
  const sampled = options({
    n: 3,
    maxTokens: 20,
    seed: 77n,
    sampling: { ...options().sampling, temperature: 2 },
  });
  const a = texts(await collect(e.generate(p, sampled)));
  assert.equal(a.length, 3);
  assert.equal(new Set(a).size, 3, `choices should differ: ${JSON.stringify(a)}`);
  assert.deepEqual(texts(await collect(e.generate(p, sampled))), a);
  // Choice i of n equals the single choice drawn from stream i: choices don't leak state into each other.
  const events = await collect(e.generate(p, { ...sampled, n: 1 }));
  assert.equal(texts(events)[0], a[0]);
});

Deno.test("chat engine: stop sequences, max tokens and logprobs line up with the text", async () => {
  const e = await engine();
  const p = e.prompt(hi);
  const stopped = await collect(e.generate(p, options({ stop: [" chat"], logprobs: 2 })));
  assert.deepEqual(texts(stopped), ["Hello from"]);
  const fin = stopped.at(-1)!;
  assert.ok(fin.type === "finish" && fin.reason === "stop");
  // Logprobs cover the tokens whose text was emitted: "Hello", " from" (the stop token is dropped).
  const lps = stopped.flatMap((ev) => (ev.type === "delta" ? ev.logprobs ?? [] : []));
  assert.deepEqual(lps.map((l) => l.token), ["Hello", " from"]);
  assert.ok(lps.every((l) => l.top.length === 2));
  const short = await collect(e.generate(p, options({ maxTokens: 2 })));
  assert.deepEqual(texts(short), ["Hello from"]);
  assert.deepEqual(short.at(-1), { type: "finish", choice: 0, reason: "length", completionTokens: 2 });
  // A budget the window can't hold is cut to the window.
  const big = e.prompt([{ role: "user", content: "Count forever" }]);
  const all = await collect(e.generate(big, options({ maxTokens: 5000 })));
  const end = all.at(-1)!;
  assert.ok(end.type === "finish" && end.completionTokens === e.contextLength - big.ids.length);
});

Deno.test("chat engine: an abort stops generation before the next token", async () => {
  const e = await engine();
  const ctrl = new AbortController();
  const p = e.prompt([{ role: "user", content: "Count forever" }]);
  let deltas = 0;
  await assert.rejects(
    (async () => {
      for await (const ev of e.generate(p, options({ maxTokens: 500, signal: ctrl.signal }))) {
        if (ev.type === "delta" && ++deltas === 3) ctrl.abort();
      }
    })(),
    (err: unknown) => (err as Error).name === "AbortError",
  );
  assert.equal(deltas, 3);
  // Returning early (a client that stops reading) also ends it cleanly, and the engine serves again.
  for await (const ev of e.generate(p, options({ maxTokens: 500 }))) if (ev.type === "delta") break;
  assert.deepEqual(texts(await collect(e.generate(e.prompt(hi), options()))), [HELLO]);
});

Deno.test("chat engine: plug-in points see every step (logits processor, output parser)", async () => {
  const e = await engine();
  const seen: number[] = [];
  let pushed = "";
  const events = await collect(e.generate(
    e.prompt(hi),
    options({
      logitsProcessor: () => ({
        process(logits) {
          // Forbid the greedy first token: the reply must change.
          if (seen.length === 0) logits[e.prompt([{ role: "user", content: "x" }]).ids[0]] = -Infinity;
        },
        accept: (id) => void seen.push(id),
      }),
      outputParser: () => ({
        push(text) {
          pushed += text;
          return [{ content: text.toUpperCase() }];
        },
        end: () => [{ content: "|" }],
        finishReason: undefined,
      }),
    }),
  ));
  assert.equal(seen.length, 6);
  assert.equal(texts(events)[0], HELLO.toUpperCase() + "|");
  assert.equal(pushed, HELLO);
});

Deno.test("chat engine: missing files and offline hub models say what is missing and how to get it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "chat-missing-" });
  try {
    await assert.rejects(loadChat(entry(dir), ctx()), (e: unknown) => {
      assert.ok(e instanceof ModelFilesMissing);
      for (const f of requiredChatFiles("fp32")) assert.ok(e.message.includes(f), `${f} in ${e.message}`);
      return true;
    });
    await assert.rejects(loadChat(entry(TINY, { dtype: "q4f16" }), ctx()), /onnx\/model_q4f16\.onnx/);
    await assert.rejects(loadChat(entry(TINY, { dtype: "q7" }), ctx()), /unknown dtype/);
    const hub = entry(join(dir, "hub", "acme", "chat-tiny"), { repo: "acme/chat-tiny" });
    await assert.rejects(loadChat(hub, ctx(false, dir)), (e: unknown) => {
      assert.ok(e instanceof ModelFilesMissing);
      assert.match(e.message, /without --offline/);
      assert.match(e.message, /acme\/chat-tiny/);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("chat engine: a hub entry downloads into <models>/hub/<repo> and then loads offline", async () => {
  const hub = await startFakeHub({ "acme/chat-tiny": { dir: TINY } });
  const models = await Deno.makeTempDir({ prefix: "chat-hub-" });
  const { tf } = await transformersRuntime("cpu", memoryLogger());
  const host = tf.env.remoteHost;
  tf.env.remoteHost = `${hub.url}/`;
  try {
    const dir = join(models, "hub", "acme", "chat-tiny");
    const hubEntry = entry(dir, { repo: "acme/chat-tiny" });
    const downloaded = await loadChat(hubEntry, ctx(true, models));
    for (const f of requiredChatFiles("fp32")) {
      assert.ok(Deno.statSync(join(dir, f)).isFile, `${f} downloaded`);
    }
    assert.deepEqual(texts(await collect(downloaded.generate(downloaded.prompt(hi), options()))), [HELLO]);
    await downloaded.dispose();
    const offline = await loadChat(hubEntry, ctx(false, models));
    await offline.dispose();
  } finally {
    tf.env.remoteHost = host;
    await hub.close();
    await Deno.remove(models, { recursive: true });
  }
});

Deno.test("download progress: off a terminal, one log line per file started and completed", () => {
  const log = memoryLogger();
  const events = (p: ReturnType<typeof downloadProgress>) => {
    p.callback({ status: "initiate", file: "config.json" });
    p.callback({ status: "progress", file: "onnx/model.onnx", loaded: 10, total: 2_000_000 });
    p.callback({ status: "progress", file: "onnx/model.onnx", loaded: 2_000_000, total: 2_000_000 });
    p.callback({ status: "done", file: "onnx/model.onnx" });
    p.stop();
  };
  events(downloadProgress("m", log, false));
  const lines = log.lines.map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.msg, l.file]), [["downloading", "onnx/model.onnx"], [
    "downloaded",
    "onnx/model.onnx",
  ]]);
  assert.equal(lines[0].mb, 2);
});
