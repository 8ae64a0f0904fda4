// Runs the GGUF loaders on the generated chat-tiny and embed-tiny exports (needs `deno task native:llama` and
// the test models): what a loaded model reports holding, for the memory budget, against what llama.cpp must
// allocate for it (the weights, and a KV cache sized for every parallel sequence up front).
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { memoryLogger } from "../../log.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import { loadLlamaChat, loadLlamaEmbedding } from "./mod.ts";
import { kvStreamBytes, type LlamaChat, worthCopying } from "./chat.ts";

const MODELS = fileURLToPath(new URL("../../../models/generated/", import.meta.url));

function entry(task: "chat" | "embedding", path: string): ModelEntry {
  return {
    id: "m",
    task,
    engine: "llama.cpp",
    path: MODELS + path,
    device: "cpu",
    options: {},
    created: 0,
    ownedBy: "t",
  };
}

const ctx = (parallel: number): LoadContext => ({
  modelsDir: MODELS,
  threads: 1,
  allowRemote: false,
  log: memoryLogger(),
  parallel,
});

Deno.test("llama loaders: memoryBytes is the weights as allocated plus the context's KV cache and buffers", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const file = Deno.statSync(MODELS + path).size;
  const one = await loadLlamaChat(entry("chat", path), ctx(1));
  const three = await loadLlamaChat(entry("chat", path), ctx(3));
  try {
    // F32 weights: the file less its header and vocabulary, the same whatever the context.
    assert.ok(one.model.bytes > 0.97 * file && one.model.bytes <= file, `${one.model.bytes} of ${file}`);
    assert.equal(three.model.bytes, one.model.bytes);
    assert.equal(one.memoryBytes(), one.model.bytes + one.ctx.bytes);
    // chat-tiny's KV cache per cell: 2 layers x (K, V) x 2 KV heads x head size 32 x 2 bytes (f16). A context
    // holds contextLength cells per parallel sequence, allocated at load.
    const perCell = 2 * 2 * 2 * 32 * 2;
    assert.ok(one.ctx.bytes >= one.contextLength * perCell, `${one.ctx.bytes}`);
    const extra = three.memoryBytes() - one.memoryBytes();
    assert.ok(extra >= 2 * one.contextLength * perCell, `two more sequences hold ${extra} more`);
  } finally {
    await one.dispose();
    await three.dispose();
  }
  const embed = await loadLlamaEmbedding(entry("embedding", "embed-tiny/gguf/embed-tiny-F32.gguf"), ctx(1));
  try {
    assert.ok(embed.memoryBytes() > embed.model.bytes && embed.model.bytes > 0);
  } finally {
    await embed.dispose();
  }
});

Deno.test("llama chat: a closed sequence's cells stay in its slot, nothing copied out, and a later turn reuses them", async () => {
  const chat = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), ctx(2));
  try {
    const base = chat.memoryBytes();
    // Copying out counted: the close must not call it (it held up the model's thread at every request's end).
    let copies = 0;
    const saveSeq = chat.ctx.saveSeq.bind(chat.ctx);
    chat.ctx.saveSeq = (seq) => (copies++, saveSeq(seq));
    const first = chat.render([{ role: "user", content: "Hi there!" }]);
    const a = chat.open();
    await chat.prefill(a, first);
    await chat.step(a, 42);
    chat.close(a);
    const held = [...first, 42];
    assert.equal(copies, 0);
    assert.equal(chat.memoryBytes(), base);
    // Another conversation meanwhile takes the empty slot, not the one holding the first turn.
    const other = chat.open();
    await chat.prefill(other, chat.render([{ role: "user", content: "Something else entirely, please." }]));
    // The next turn starts with everything the first held: nothing read again, nothing copied.
    const b = chat.open();
    const { cachedTokens, logits } = await chat.prefill(b, [...held, 7, 8]);
    assert.equal(cachedTokens, held.length);
    const fresh = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), ctx(1));
    try {
      const s = fresh.open();
      assert.ok(worstDiff(logits.slice(), (await fresh.prefill(s, [...held, 7, 8])).logits) < 1e-3);
    } finally {
      await fresh.dispose();
    }
    chat.close(b);
    chat.close(other);
    assert.equal(copies, 0);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: the load context's hook runs before a round that reads a prompt, not before a step", async () => {
  let calls = 0;
  const chat = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), {
    ...ctx(1),
    beforeLongWork: () => calls++,
  });
  try {
    const s = chat.open();
    await chat.prefill(s, chat.render([{ role: "user", content: "Hello." }]));
    assert.equal(calls, 1);
    await chat.step(s, 11);
    await chat.step(s, 12);
    assert.equal(calls, 1);
    chat.close(s);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: a marked prompt's cells are copied out when its slot is taken, counted, and restored", async () => {
  const chat = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), ctx(1));
  try {
    const base = chat.memoryBytes();
    // chat-tiny's cells: 2 layers x (K, V) x 2 KV heads x head size 32 x 2 bytes (f16) = 512 bytes a token.
    const perToken = 512;
    const marked = chat.render([{ role: "user", content: "Keep this one, please." }]);
    const a = chat.open({ keep: true });
    await chat.prefill(a, marked);
    chat.close(a);
    assert.equal(chat.memoryBytes(), base, "still in its slot");
    // Unmarked traffic takes the only slot: the marked cells go to host memory first.
    const b = chat.open();
    await chat.prefill(b, chat.render([{ role: "user", content: "Unrelated traffic." }]));
    chat.close(b);
    const saved = chat.memoryBytes() - base;
    assert.ok(saved >= marked.length * perToken && saved < marked.length * perToken + 4096, `${saved}`);
    // The marked conversation's next turn is restored from there.
    const c = chat.open();
    assert.equal((await chat.prefill(c, [...marked, 5, 6])).cachedTokens, marked.length);
    chat.close(c);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: a prompt sharing only a template's opening with held cells reads anew, no copy", async () => {
  const chat = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), ctx(2));
  try {
    const first = chat.render([{
      role: "user",
      content: "Hi there! How are you doing today, my friend? ".repeat(4),
    }]);
    const a = chat.open();
    await chat.prefill(a, first);
    chat.close(a);
    // Another conversation: the same template opening, then different words. A saved state of the whole
    // first prompt is not restored for those few tokens (nor is a running stream's copied).
    const other = chat.render([{ role: "user", content: "Bye now." }]);
    const shared = first.findIndex((t, i) => t !== other[i]);
    assert.ok(shared > 0 && shared * 2 < first.length, `shared ${shared} of ${first.length}`);
    const b = chat.open();
    assert.equal((await chat.prefill(b, other)).cachedTokens, 0);
    const c = chat.open();
    assert.equal((await chat.prefill(c, first)).cachedTokens, first.length - 1);
    chat.close(b);
    chat.close(c);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: a prompt reads on from a template's opening its slot holds, however short, as a fresh model would", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const chat = await loadLlamaChat(entry("chat", path), ctx(1));
  const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
  try {
    const first = chat.render([{ role: "user", content: "Hi there! How are you doing today? ".repeat(6) }]);
    const a = chat.open();
    await chat.prefill(a, first);
    chat.close(a);
    // The one slot holds the first conversation; the next shares only the template's opening with it, far
    // less than a copy is worth, and those cells are kept all the same (no copy: they are the slot's own).
    const other = chat.render([{ role: "user", content: "Bye now." }]);
    const shared = first.findIndex((t, i) => t !== other[i]);
    assert.ok(
      shared > 0 && !worthCopying(shared, first.length, false),
      `shared ${shared} of ${first.length}`,
    );
    const b = chat.open();
    assert.equal(await prefillAsFresh(chat, fresh, b, other), shared);
    // And the next turn of that conversation reads only what it adds.
    const next = [...other, 7, 8];
    chat.close(b);
    const c = chat.open();
    assert.equal(await prefillAsFresh(chat, fresh, c, next), other.length);
    chat.close(c);
  } finally {
    await chat.dispose();
    await fresh.dispose();
  }
});

Deno.test("llama chat: a copy is worth it for at least half of what it copies, or a long prefix", () => {
  for (const gpu of [true, false]) {
    assert.equal(worthCopying(3, 314, gpu), false);
    assert.equal(worthCopying(157, 314, gpu), true);
    assert.equal(worthCopying(256, 4000, gpu), true);
  }
  assert.equal(worthCopying(100, 2000, true), false);
  assert.equal(worthCopying(100, 2000, false), true);
});

Deno.test("llama chat: a running stream is not copied for a few tokens more than the slot's own prefix", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const chat = await loadLlamaChat(entry("chat", path), ctx(2));
  const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
  try {
    const base = Array.from({ length: 40 }, (_, i) => 100 + i);
    // Slot 0 keeps base + 1, 2, 3; a running sequence in slot 1 holds base + 7, 8, 9, 10 (copied: 40 tokens).
    const a = chat.open();
    await chat.prefill(a, [...base, 1, 2, 3]);
    chat.close(a);
    const b = chat.open();
    assert.equal((await chat.prefill(b, [...base, 7, 8, 9, 10])).cachedTokens, base.length);
    // The next prompt takes slot 0: its own 40 tokens are reused; the running stream's 42 are not worth a copy.
    const c = chat.open();
    assert.equal(await prefillAsFresh(chat, fresh, c, [...base, 7, 8, 11]), base.length);
    chat.close(b);
    chat.close(c);
  } finally {
    await chat.dispose();
    await fresh.dispose();
  }
});

Deno.test("llama chat: a prompt that fails in a later chunk leaves no cells for the slot's next sequence", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const small = { ...entry("chat", path), options: { batch_size: 512 } };
  const chat = await loadLlamaChat(small, ctx(1));
  const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
  try {
    const ids = (len: number, from: number) =>
      Array.from({ length: len }, (_, i) => 100 + ((from + i) % 500));
    // A prompt longer than one batch (batch_size 512) is read in two rounds; the second llama_decode fails.
    const decode = chat.ctx.decode.bind(chat.ctx);
    let calls = 0;
    chat.ctx.decode = (...args) => calls++ === 1 ? -3 : decode(...args);
    const failing = chat.open();
    await assert.rejects(chat.prefill(failing, ids(700, 7)), /llama_decode failed/);
    assert.equal(calls, 2);
    chat.close(failing);
    // The next sequence takes the same (only) slot; its logits are a fresh model's for the same prompt.
    const next = chat.open();
    const prompt = ids(12, 3);
    const got = (await chat.prefill(next, prompt)).logits.slice();
    const seq = fresh.open();
    const want = (await fresh.prefill(seq, prompt)).logits;
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
    assert.ok(worst < 1e-3, `logits differ by ${worst}`);
    chat.close(next);
    fresh.close(seq);
  } finally {
    await chat.dispose();
    await fresh.dispose();
  }
});

/** Prefills `seq` of `chat` with `ids`, checks the logits against a fresh model's, returns cachedTokens. */
async function prefillAsFresh(
  chat: LlamaChat,
  fresh: LlamaChat,
  seq: number,
  ids: number[],
): Promise<number> {
  const got = await chat.prefill(seq, ids);
  const f = fresh.open();
  assert.ok(worstDiff(got.logits.slice(), (await fresh.prefill(f, ids)).logits) < 1e-3);
  fresh.close(f);
  return got.cachedTokens;
}

/** Largest difference between two logits rows. */
function worstDiff(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

Deno.test("llama chat: KV streams per slot: forks share it, a running prefix is copied, prefills wait for a slot", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const chat = await loadLlamaChat(entry("chat", path), ctx(2));
  const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
  const reference = async (ids: number[]) => {
    const s = fresh.open();
    const got = (await fresh.prefill(s, ids)).logits.slice();
    fresh.close(s);
    return got;
  };
  try {
    const prompt = chat.render([{ role: "user", content: "Hi there!" }]);
    // A fork (another choice) generates in the parent's slot; closing it gives the parent its cells back.
    const a = chat.open();
    await chat.prefill(a, prompt);
    const f = chat.fork(a);
    await chat.step(f, 11);
    await chat.step(f, 12);
    await assert.rejects(chat.step(a, 13), /forked/);
    chat.close(f);
    const afterFork = (await chat.step(a, 13)).slice();
    assert.ok(worstDiff(afterFork, await reference([...prompt, 13])) < 1e-3);
    // Another slot starting with a running sequence's tokens copies its stream and reads only the rest.
    const b = chat.open();
    const longer = [...prompt, 13, 21, 22];
    const got = await chat.prefill(b, longer);
    assert.equal(got.cachedTokens, prompt.length + 1);
    assert.ok(worstDiff(got.logits.slice(), await reference(longer)) < 1e-3);
    // Both slots are taken: a third prefill waits until one closes, then runs in it.
    const c = chat.open();
    let done = false;
    const waiting = chat.prefill(c, [...prompt, 31]).then((r) => (done = true, r.logits.slice()));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(done, false);
    chat.close(a);
    assert.ok(worstDiff(await waiting, await reference([...prompt, 31])) < 1e-3);
    chat.close(b);
    chat.close(c);
  } finally {
    await chat.dispose();
    await fresh.dispose();
  }
});

Deno.test("llama chat: a KV stream's bytes from the GGUF's attention shape, what a move between slots copies", async () => {
  const chat = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), ctx(3));
  try {
    // chat-tiny: 2 layers x (K, V) x 2 KV heads x head size 32 x 2 bytes (f16) = 512 bytes a cell.
    assert.equal(kvStreamBytes(chat.model, chat.contextLength), 512 * chat.contextLength);
    // Every stream of the context is in what it allocated.
    assert.ok(3 * kvStreamBytes(chat.model, chat.contextLength) <= chat.ctx.bytes);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: a prompt takes a slot next to the running ones, the cells held there moved to the slot left longest ago", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const chat = await loadLlamaChat(entry("chat", path), ctx(5));
  try {
    // The sequence ids of every llama_decode call.
    const rounds: number[][] = [];
    const decode = chat.ctx.decode.bind(chat.ctx);
    chat.ctx.decode = (tokens, pos, seq, out, logits) => (
      rounds.push([...seq.subarray(0, tokens.length)]), decode(tokens, pos, seq, out, logits)
    );
    const prompts = ["one", "two", "three", "four", "five"].map((t) =>
      chat.render([{ role: "user", content: `Tell me about ${t}.` }])
    );
    const seqs = [];
    for (const p of prompts) {
      const s = chat.open();
      await chat.prefill(s, p);
      seqs.push(s);
    }
    // Slots 0..4 in order; the 5th, 2nd and 4th close in that order, so the slot left longest ago is the 5th,
    // two ids away from the running ones (0 and 2).
    for (const i of [4, 1, 3]) chat.close(seqs[i]);
    // A prompt sharing nothing with any slot's cells (no template opening either): it takes slot 1, between
    // the running ones, and slot 1's cells (the 2nd conversation's) move to slot 4, whose own go.
    const late = chat.open();
    await chat.prefill(late, [7, 8, 9, 10, 11]);
    rounds.length = 0;
    await Promise.all([chat.step(seqs[0], 11), chat.step(seqs[2], 12), chat.step(late, 13)]);
    // One round, its ids one run (0, 1, 2): llama.cpp computes it in one micro-batch, not three.
    assert.deepEqual(rounds.map((r) => [...new Set(r)].sort((x, y) => x - y)), [[0, 1, 2]]);
    for (const s of [seqs[0], seqs[2], late]) chat.close(s);
    // The 2nd conversation's next turn finds its cells whole (in slot 4 now), and they are its own: the logits
    // match a fresh model's. The 5th's went (only the opening it shares with the others is found).
    const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
    try {
      for (const i of [1, 4]) {
        const s = chat.open();
        const r = await chat.prefill(s, [...prompts[i], 5, 6]);
        if (i === 1) assert.equal(r.cachedTokens, prompts[i].length);
        else assert.ok(r.cachedTokens < prompts[i].length - 2, `${r.cachedTokens}`);
        const f = fresh.open();
        assert.ok(worstDiff(r.logits.slice(), (await fresh.prefill(f, [...prompts[i], 5, 6])).logits) < 1e-3);
        fresh.close(f);
        chat.close(s);
      }
    } finally {
      await fresh.dispose();
    }
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: a prompt takes the slot next to a running one over one sharing a token more", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const chat = await loadLlamaChat(entry("chat", path), ctx(4));
  const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
  try {
    const rounds: number[][] = [];
    const decode = chat.ctx.decode.bind(chat.ctx);
    chat.ctx.decode = (tokens, pos, seq, out, logits) => (
      rounds.push([...new Set(seq.subarray(0, tokens.length))].sort((x, y) => x - y)),
        decode(tokens, pos, seq, out, logits)
    );
    // Every slot holds a 40-token opening and a tail of its own; slot 3's tail starts as the next prompt's.
    const base = Array.from({ length: 40 }, (_, i) => 100 + i);
    const held = [[1, 1, 1], [2, 2, 2], [3, 3, 3], [9, 5, 5]].map((t) => [...base, ...t]);
    const seqs = [];
    for (const ids of held) {
      const s = chat.open();
      await chat.prefill(s, ids);
      seqs.push(s);
    }
    for (const s of seqs) chat.close(s);
    const a = chat.open();
    await chat.prefill(a, [...held[0], 7]);
    // Slot 3 shares 41 tokens with it, slots 1 and 2 share 40: it takes slot 1, next to the running slot 0.
    const b = chat.open();
    assert.equal(await prefillAsFresh(chat, fresh, b, [...base, 9, 6, 6]), base.length);
    rounds.length = 0;
    await Promise.all([chat.step(a, 11), chat.step(b, 12)]);
    assert.deepEqual(rounds, [[0, 1]]);
    chat.close(a);
    chat.close(b);
  } finally {
    await chat.dispose();
    await fresh.dispose();
  }
});

Deno.test("llama chat: a burst after a churn gathers next to each other, moving cells, and every reply is its own", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const chat = await loadLlamaChat(entry("chat", path), ctx(8));
  const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
  const argmax = (l: Float32Array) => l.reduce((b, v, i) => (v > l[b] ? i : b), 0);
  // Greedy tokens after `ids`, prefill and steps through `m` (conversation turns: cells held in the slots).
  const generate = async (m: typeof chat, ids: number[], n: number) => {
    const s = m.open();
    const r = await m.prefill(s, ids);
    const out = [argmax(r.logits)];
    while (out.length < n) out.push(argmax(await m.step(s, out.at(-1)!)));
    m.close(s);
    return { out, cached: r.cachedTokens };
  };
  try {
    const rounds: number[][] = [];
    const decode = chat.ctx.decode.bind(chat.ctx);
    chat.ctx.decode = (tokens, pos, seq, out, logits) => (
      rounds.push([...new Set(seq.subarray(0, tokens.length))]), decode(tokens, pos, seq, out, logits)
    );
    const prompt = (i: number) => [100 + i, 200 + i, 300 + i, 400 + i, 500 + i, 600 + i];
    // The churn: eight conversations of different lengths ending in scattered order, every slot holding cells.
    const churn = await Promise.all(
      Array.from({ length: 8 }, (_, i) => generate(chat, prompt(i), 1 + (i * 5) % 8)),
    );
    // A burst of four new prompts: by least recent use alone they would take scattered slots.
    rounds.length = 0;
    const burst = await Promise.all([20, 21, 22, 23].map((i) => generate(chat, prompt(i), 6)));
    const steps = rounds.filter((r) => r.length === 4);
    assert.ok(steps.length >= 4, JSON.stringify(rounds));
    for (const r of steps) assert.equal(Math.max(...r) - Math.min(...r), 3, `ids ${r} are one run`);
    for (const [k, i] of [20, 21, 22, 23].entries()) {
      assert.deepEqual(burst[k].out, (await generate(fresh, prompt(i), 6)).out, `prompt ${i}`);
    }
    // The churn's conversations ended after 1, 6, 3, 8, 5, 2, 7 and 4 tokens: the four left last (the 5th, 2nd,
    // 7th and 4th) still hold their cells, moved or not, as least recent use alone keeps them, and those cells
    // are their own: a next turn reads only what is new and continues as a fresh model does (the kept ones
    // first: a turn of the others takes the slot left longest ago).
    for (const i of [4, 1, 6, 3, 0, 5, 2, 7]) {
      const turn = [...prompt(i), ...churn[i].out, 9, 10];
      const again = await generate(chat, turn, 3);
      const kept = [4, 1, 6, 3].includes(i);
      assert.equal(again.cached >= prompt(i).length, kept, `conversation ${i}: ${again.cached} cached`);
      assert.deepEqual(again.out, (await generate(fresh, turn, 3)).out, `conversation ${i}`);
    }
  } finally {
    await chat.dispose();
    await fresh.dispose();
  }
});

Deno.test("llama chat: a request arriving while a stream generates is read within a round or two", async () => {
  const chat = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), ctx(2));
  try {
    const prompt = chat.render([{ role: "user", content: "Hi there!" }]);
    const a = chat.open();
    await chat.prefill(a, prompt);
    let steps = 0;
    let readAt = -1;
    // The second request comes as a message (the worker's job message is a macrotask), once a is generating.
    const channel = new MessageChannel();
    const arrived = new Promise<void>((resolve) => {
      channel.port1.onmessage = async () => {
        const b = chat.open();
        await chat.prefill(b, [...prompt, 5]);
        readAt = steps;
        chat.close(b);
        resolve();
      };
    });
    for (; steps < 40; steps++) {
      if (steps === 1) channel.port2.postMessage(null);
      await chat.step(a, 100 + steps);
    }
    await arrived;
    channel.port1.close();
    chat.close(a);
    assert.ok(readAt >= 1 && readAt <= 4, `read after ${readAt} of the first stream's steps`);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: a prefill waiting for a slot and closed first stops waiting and takes none", async () => {
  const chat = await loadLlamaChat(entry("chat", "chat-tiny/gguf/chat-tiny-F32.gguf"), ctx(1));
  try {
    const prompt = chat.render([{ role: "user", content: "Hi there!" }]);
    const a = chat.open();
    await chat.prefill(a, prompt);
    // The only slot is a's: b waits, then its client leaves.
    const b = chat.open();
    const waiting = chat.prefill(b, prompt);
    chat.close(b);
    await assert.rejects(waiting, /closed/);
    chat.close(a);
    // The slot is free again (b never took it): the next prefill runs at once.
    const c = chat.open();
    const done = await Promise.race([
      chat.prefill(c, prompt).then(() => true),
      new Promise((r) => setTimeout(() => r(false), 2000)),
    ]);
    assert.equal(done, true);
    chat.close(c);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama chat: a memory that cannot cut a tail (recurrent state) forks by saving and reads prefixes anew", async () => {
  const path = "chat-tiny/gguf/chat-tiny-F32.gguf";
  const chat = await loadLlamaChat(entry("chat", path), ctx(1));
  const fresh = await loadLlamaChat(entry("chat", path), ctx(1));
  const reference = async (ids: number[]) => {
    const s = fresh.open();
    const got = (await fresh.prefill(s, ids)).logits.slice();
    fresh.close(s);
    return got;
  };
  // chat-tiny's memory is a KV cache: make it behave as a recurrent state does (a partial cut refused, nothing
  // removed; the whole sequence always goes).
  (chat.model as { recurrent: boolean }).recurrent = true;
  const cutWhole = chat.ctx.seqRm.bind(chat.ctx);
  chat.ctx.seqRm = (seq, p0, p1) => p0 > 0 ? false : cutWhole(seq, p0, p1);
  try {
    const prompt = chat.render([{ role: "user", content: "Hi there!" }]);
    const a = chat.open();
    await chat.prefill(a, prompt);
    const f = chat.fork(a);
    await chat.step(f, 11);
    await chat.step(f, 12);
    chat.close(f);
    // The parent's state is what it was before the fork's two tokens.
    assert.ok(worstDiff((await chat.step(a, 13)).slice(), await reference([...prompt, 13])) < 1e-3);
    chat.close(a);
    // A later prompt sharing the saved prefix but not all of it: the saved state can't be cut back, so the
    // prompt is read from scratch, with the logits of a fresh model.
    const b = chat.open();
    const other = [...prompt, 21];
    const got = await chat.prefill(b, other);
    assert.equal(got.cachedTokens, 0);
    assert.ok(worstDiff(got.logits.slice(), await reference(other)) < 1e-3);
    chat.close(b);
  } finally {
    await chat.dispose();
    await fresh.dispose();
  }
});
