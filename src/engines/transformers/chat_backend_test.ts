// Runs the real transformers.js chat backend on the generated chat-tiny model (models/generated/chat-tiny),
// through the chat pipeline: model files (missing, offline, downloaded from a hub into <models>/hub/<repo>),
// the events of a generation, n choices from one prefill (forked sequences), seeds, stop sequences, logprobs,
// cancellation between tokens, the sequence interface itself (cache continuation equals a full run), the prompt
// cache (exact reuse counts, the uncached reply) and sequences interleaved token by token.
import assert from "node:assert/strict";
import { join } from "node:path";
import { memoryLogger } from "../../log.ts";
import { ModelFilesMissing } from "../../errors.ts";
import type { ChatJob, LoadContext, ModelEntry } from "../types.ts";
import { loadChatBackend, type TransformersChat } from "./chat_backend.ts";
import { requiredChatFiles } from "./chat_files.ts";
import { runChat } from "../../chat/pipeline.ts";
import { startFakeHub } from "../../../tests/fake_hub.ts";
import { chatJob, collect, texts } from "../../../tests/support/chat_job.ts";

/** The sampling chat-tiny's generation_config asks for (greedy), as the prompt event reports it. */
const GREEDY = { temperature: 0, topP: 1 };

const MODELS = new URL("../../../models/", import.meta.url).pathname;
const TINY = join(MODELS, "generated", "chat-tiny");
const HELLO = "Hello from chat-tiny!";

function entry(path: string, extra: Partial<ModelEntry> = {}): ModelEntry {
  return {
    id: "chat-tiny",
    task: "chat",
    engine: "transformers",
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

let shared: TransformersChat | undefined;
async function engine(): Promise<TransformersChat> {
  return shared ??= await loadChatBackend(entry(TINY), ctx());
}

const hi = [{ role: "user" as const, content: "Hi there!" }];
const forever = [{ role: "user" as const, content: "Count forever" }];
const run = (e: TransformersChat, job: ChatJob, signal?: AbortSignal) =>
  collect(runChat(e, job, signal ? { signal } : {}));
/** The choices' events, without the prompt event. */
const choices = async (e: TransformersChat, job: ChatJob) => (await run(e, job)).slice(1);

Deno.test("chat backend: loads chat-tiny, reports its window and defaults, greedy reply with events in order", async () => {
  const e = await engine();
  assert.equal(e.contextLength, 1024);
  assert.equal(e.vocabSize, 1170);
  assert.deepEqual(e.defaults, { temperature: 0, topP: 1, topK: 0 });
  assert.match(e.backend, /^cpu via onnxruntime-node fp32$/);
  assert.deepEqual([...e.eosIds].sort(), [1163, 1165]);
  assert.match(e.chatTemplate ?? "", /<tool_call>/);
  assert.ok((e.tokenizerJson as { model?: unknown }).model);
  const all = await run(e, chatJob(hi));
  assert.deepEqual(all[0], {
    type: "prompt",
    promptTokens: e.render(hi).length,
    cachedTokens: 0,
    sampling: GREEDY,
  });
  const events = all.slice(1);
  assert.deepEqual(events[0], { type: "start", choice: 0 });
  assert.deepEqual(events.at(-1), {
    type: "finish",
    choice: 0,
    reason: "stop",
    completionTokens: 6,
    reasoningTokens: 0,
  });
  assert.deepEqual(texts(events), [HELLO]);
  assert.ok(events.filter((ev) => ev.type === "delta").length >= 5, "one delta per token");
});

Deno.test("chat backend: n choices from one prefill, each with its own seed stream; seeds reproduce", async () => {
  const e = await engine();
  const sampled = chatJob(hi, {
    n: 3,
    maxTokens: 20,
    seed: 77n,
    sampling: { ...chatJob(hi).sampling, temperature: 2 },
  });
  const a = texts(await choices(e, sampled));
  assert.equal(a.length, 3);
  assert.equal(new Set(a).size, 3, `choices should differ: ${JSON.stringify(a)}`);
  assert.deepEqual(texts(await choices(e, sampled)), a);
  // Choice i of n equals the single choice drawn from stream i: choices don't leak state into each other.
  assert.equal(texts(await choices(e, { ...sampled, n: 1 }))[0], a[0]);
  assert.equal(e.busy(), false, "every sequence was closed");
});

Deno.test("chat backend: stop sequences, max tokens and logprobs line up with the text", async () => {
  const e = await engine();
  const stopped = await choices(e, chatJob(hi, { stop: [" chat"], logprobs: 2 }));
  assert.deepEqual(texts(stopped), ["Hello from"]);
  const fin = stopped.at(-1)!;
  assert.ok(fin.type === "finish" && fin.reason === "stop");
  const lps = stopped.flatMap((ev) => (ev.type === "delta" ? ev.logprobs ?? [] : []));
  // One entry per generated token, the one that completed the stop sequence included.
  assert.deepEqual(lps.map((l) => l.token), ["Hello", " from", " chat"]);
  assert.ok(fin.type === "finish" && fin.completionTokens === lps.length);
  assert.ok(lps.every((l) => l.top.length === 2));
  const short = await choices(e, chatJob(hi, { maxTokens: 2 }));
  assert.deepEqual(texts(short), ["Hello from"]);
  assert.deepEqual(short.at(-1), {
    type: "finish",
    choice: 0,
    reason: "length",
    completionTokens: 2,
    reasoningTokens: 0,
  });
  // No budget: whatever the window leaves.
  const all = await choices(e, chatJob(forever, { maxTokens: null }));
  const end = all.at(-1)!;
  assert.ok(end.type === "finish" && end.completionTokens === e.contextLength - e.render(forever).length);
});

Deno.test("chat backend: an abort stops generation before the next token", async () => {
  const e = await engine();
  const ctrl = new AbortController();
  let deltas = 0;
  await assert.rejects(
    (async () => {
      for await (const ev of runChat(e, chatJob(forever, { maxTokens: 500 }), { signal: ctrl.signal })) {
        if (ev.type === "delta" && ++deltas === 3) ctrl.abort();
      }
    })(),
    (err: unknown) => (err as Error).name === "AbortError",
  );
  assert.equal(deltas, 3);
  // Returning early (a client that stops reading) also ends it cleanly, and the engine serves again.
  for await (const ev of runChat(e, chatJob(forever, { maxTokens: 500 }))) if (ev.type === "delta") break;
  assert.equal(e.busy(), false, "the sequence was closed");
  assert.deepEqual(texts(await choices(e, chatJob(hi))), [HELLO]);
});

Deno.test("chat backend: a step continues the cache exactly as a full prefill; forks are independent", async () => {
  const e = await engine();
  e.clearCache();
  const ids = e.render(hi);
  const whole = e.open();
  const full = (await e.prefill(whole, ids)).logits.slice();
  const part = e.open();
  await e.prefill(part, ids.slice(0, -1));
  const fork = e.fork(part);
  const stepped = (await e.step(part, ids.at(-1)!)).slice();
  const forked = (await e.step(fork, ids.at(-1)!)).slice();
  for (let i = 0; i < full.length; i++) {
    assert.ok(Math.abs(full[i] - stepped[i]) < 1e-4, `logit ${i}: ${full[i]} vs ${stepped[i]}`);
    assert.equal(forked[i], stepped[i]);
  }
  for (const s of [whole, part, fork]) e.close(s);
  assert.equal(e.busy(), false);
});

Deno.test("chat backend: a later prompt reuses the longest prefix a closed sequence holds, counted exactly", async () => {
  const e = await loadChatBackend(entry(TINY), { ...ctx(), parallel: 2 });
  try {
    const first = [{ role: "system" as const, content: "You are terse." }, ...hi];
    const r1 = await run(e, chatJob(first));
    assert.deepEqual(r1[0], {
      type: "prompt",
      promptTokens: e.render(first).length,
      cachedTokens: 0,
      sampling: GREEDY,
    });
    const fin1 = r1.at(-1)!;
    assert.ok(fin1.type === "finish");
    const second = [...first, { role: "assistant" as const, content: HELLO }, {
      role: "user" as const,
      content: "Count forever",
    }];
    const job2 = chatJob(second, { maxTokens: 10, logprobs: 3 });
    const r2 = await run(e, job2);
    // The first run's prompt and every token it generated but the last (sampled, never fed back).
    const reused = e.render(first).length + fin1.completionTokens - 1;
    assert.deepEqual(r2[0], {
      type: "prompt",
      promptTokens: e.render(second).length,
      cachedTokens: reused,
      sampling: GREEDY,
    });
    // The same job with nothing cached: the same text and the same logprobs.
    e.clearCache();
    const cold = await run(e, job2);
    assert.deepEqual(cold[0], {
      type: "prompt",
      promptTokens: e.render(second).length,
      cachedTokens: 0,
      sampling: GREEDY,
    });
    assert.deepEqual(texts(r2.slice(1)), texts(cold.slice(1)));
    const lps = (evs: typeof r2) => evs.flatMap((ev) => ev.type === "delta" ? ev.logprobs ?? [] : []);
    for (const [i, lp] of lps(r2).entries()) {
      assert.equal(lp.token, lps(cold)[i].token);
      assert.ok(Math.abs(lp.logprob - lps(cold)[i].logprob) < 1e-4);
    }
    // A prompt equal to a cached sequence's tokens reuses all but its last token; a prefix of them, a cut copy.
    const ids = e.render(second);
    const seq = e.open();
    assert.equal((await e.prefill(seq, ids)).cachedTokens, ids.length - 1);
    e.close(seq);
    const shorter = e.open();
    const cut = await e.prefill(shorter, ids.slice(0, 5));
    assert.equal(cut.cachedTokens, 4);
    const fresh = e.open();
    e.clearCache();
    const full = await e.prefill(fresh, ids.slice(0, 5));
    assert.equal(full.cachedTokens, 0);
    for (let i = 0; i < full.logits.length; i++) assert.ok(Math.abs(full.logits[i] - cut.logits[i]) < 1e-4);
    e.close(shorter), e.close(fresh);
  } finally {
    await e.dispose();
  }
});

Deno.test("chat backend: concurrent jobs interleave token by token, each with its own exact reply", async () => {
  const e = await loadChatBackend(entry(TINY), { ...ctx(), parallel: 3 });
  try {
    assert.equal(e.parallel, 3);
    const jobs = [chatJob(hi), chatJob(forever, { maxTokens: 12 }), chatJob(hi, { maxTokens: 3 })];
    const alone: string[] = [];
    for (const job of jobs) alone.push(texts((await run(e, job)).slice(1))[0]);
    const order: number[] = [];
    const together = await Promise.all(jobs.map(async (job, j) => {
      const evs = [];
      for await (const ev of runChat(e, job)) {
        if (ev.type === "delta") order.push(j);
        evs.push(ev);
      }
      return texts(evs.slice(1))[0];
    }));
    assert.deepEqual(together, alone);
    // Job 0 had not finished when job 1's first token came: they ran together, not one after another.
    assert.ok(order.indexOf(1) < order.lastIndexOf(0), `token order ${order.join("")}`);
    assert.equal(e.busy(), false);
  } finally {
    await e.dispose();
  }
});

Deno.test("chat backend: missing files and offline hub models say what is missing and how to get it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "chat-missing-" });
  try {
    await assert.rejects(loadChatBackend(entry(dir), ctx()), (e: unknown) => {
      assert.ok(e instanceof ModelFilesMissing);
      for (const f of requiredChatFiles("fp32")) assert.ok(e.message.includes(f), `${f} in ${e.message}`);
      return true;
    });
    await assert.rejects(loadChatBackend(entry(TINY, { dtype: "uint8" }), ctx()), /onnx\/model_uint8\.onnx/);
    await assert.rejects(loadChatBackend(entry(TINY, { dtype: "q7" }), ctx()), /unknown dtype/);
    const hub = entry(join(dir, "hub", "acme", "chat-tiny"), { repo: "acme/chat-tiny" });
    await assert.rejects(loadChatBackend(hub, ctx(false, dir)), (e: unknown) => {
      assert.ok(e instanceof ModelFilesMissing);
      assert.match(e.message, /without --offline/);
      assert.match(e.message, /acme\/chat-tiny/);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("chat backend: a hub entry downloads into <models>/hub/<repo> and then loads offline", async () => {
  const hub = await startFakeHub({ "acme/chat-tiny": { dir: TINY } });
  const models = await Deno.makeTempDir({ prefix: "chat-hub-" });
  try {
    const dir = join(models, "hub", "acme", "chat-tiny");
    const hubEntry = entry(dir, { repo: "acme/chat-tiny" });
    const downloaded = await loadChatBackend(hubEntry, { ...ctx(true, models), hub: { endpoint: hub.url } });
    // The hub's one download path: a listing, then verified downloads of exactly the needed files.
    assert.ok(hub.requests.some((r) => r.path.startsWith("/api/models/acme/chat-tiny/revision/")));
    assert.deepEqual([...Deno.readDirSync(join(dir, "onnx"))].map((e) => e.name), ["model.onnx"]);
    for (const f of requiredChatFiles("fp32")) {
      assert.ok(Deno.statSync(join(dir, f)).isFile, `${f} downloaded`);
    }
    assert.deepEqual(texts(await choices(downloaded, chatJob(hi))), [HELLO]);
    await downloaded.dispose();
    const offline = await loadChatBackend(hubEntry, ctx(false, models));
    await offline.dispose();
  } finally {
    await hub.close();
    await Deno.remove(models, { recursive: true });
  }
});

Deno.test("chat backend: memoryBytes counts the loaded dtype's file and the KV caches held, a shared one once", async () => {
  const e = await loadChatBackend(entry(TINY), { ...ctx(), parallel: 2 });
  try {
    const weights = Deno.statSync(join(TINY, "onnx", "model.onnx")).size;
    // The folder holds other dtypes too; only the fp32 graph is loaded, so only it counts.
    assert.ok(Deno.statSync(join(TINY, "onnx", "model_q4.onnx")).size > 0);
    assert.equal(e.memoryBytes(), weights);
    // chat-tiny: 2 layers x (K, V) x 2 KV heads x head size 32 x 4 bytes per position.
    const perToken = 2 * 2 * 2 * 32 * 4;
    const ids = e.render(hi);
    const a = e.open();
    await e.prefill(a, ids);
    assert.equal(e.memoryBytes(), weights + ids.length * perToken);
    const b = e.fork(a);
    assert.equal(e.memoryBytes(), weights + ids.length * perToken, "a fork shares its cache");
    await e.step(b, ids[0]);
    assert.equal(e.memoryBytes(), weights + (2 * ids.length + 1) * perToken);
    // Closed, both stay as the prompt cache (parallel 2 keeps two) until it is cleared.
    e.close(a), e.close(b);
    assert.equal(e.memoryBytes(), weights + (2 * ids.length + 1) * perToken);
    e.clearCache();
    assert.equal(e.memoryBytes(), weights);
  } finally {
    await e.dispose();
  }
});
