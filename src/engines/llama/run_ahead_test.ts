// Runs the pipeline on the generated chat-tiny GGUF with and without the C run ahead (lshim_run_ahead): a lone
// stream whose rows need only the sampler is drawn in C, and every reply (tokens, stop sequences, the cells
// left for the next turn, requests arriving meanwhile, n choices, a client leaving) is what the pipeline's own
// draws give.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { memoryLogger } from "../../log.ts";
import type { ChatEvent, ChatJob, ChatMessage, LoadContext } from "../types.ts";
import { runChat } from "../../chat/pipeline.ts";
import { chatJob, collect, texts } from "../../../tests/support/chat_job.ts";
import { loadLlamaChat } from "./mod.ts";
import { coreCount } from "./placement.ts";
import type { LlamaChat } from "./chat.ts";

const MODELS = fileURLToPath(new URL("../../../models/generated/", import.meta.url));

const load = (parallel = 2, threads = 1) =>
  loadLlamaChat(
    {
      id: "m",
      task: "chat",
      engine: "llama.cpp",
      path: MODELS + "chat-tiny/gguf/chat-tiny-F32.gguf",
      device: "cpu",
      options: {},
      created: 0,
      ownedBy: "t",
    },
    {
      modelsDir: MODELS,
      threads,
      allowRemote: false,
      log: memoryLogger(),
      parallel,
    } satisfies LoadContext,
  );

/**
 * Counts the runs ahead the backend starts; `off` hides the method, so the pipeline draws every token. Runs
 * are allowed whatever this machine's cores (whether they pay is placement.ts's runAheadPays, tested there).
 */
function watch(chat: LlamaChat, off: boolean): { runs: number } {
  chat.aheadWhenAlone = true;
  const seen = { runs: 0 };
  const own = chat.runAhead.bind(chat);
  Object.defineProperty(chat, "runAhead", {
    configurable: true,
    value: off ? undefined : (...a: Parameters<LlamaChat["runAhead"]>) => {
      const run = own(...a);
      if (run) seen.runs++;
      return run;
    },
  });
  return seen;
}

const hi: ChatMessage[] = [{ role: "user", content: "Hi there!" }];
const sampled = (extra: Partial<ChatJob> = {}) =>
  chatJob(hi, {
    maxTokens: 40,
    minTokens: 40,
    sampling: { temperature: 1, topP: 1, topK: 0, presencePenalty: 0, frequencyPenalty: 0, logitBias: {} },
    seed: 7n,
    ...extra,
  });

/** What a reply is on the wire: its text per choice, tokens counted, finish reasons. */
function reply(events: ChatEvent[]) {
  return {
    texts: texts(events),
    finishes: events.flatMap((e) =>
      e.type === "finish" ? [{ reason: e.reason, tokens: e.completionTokens, stop: e.stopSequence }] : []
    ),
    cached: events.map((e) => e.type === "prompt" ? e.cachedTokens : null).filter((c) => c !== null),
  };
}

/** Each job in turn on a fresh model, with or without runs ahead. */
async function inTurn(off: boolean, jobs: ChatJob[]) {
  const chat = await load();
  const seen = watch(chat, off);
  try {
    const out = [];
    for (const job of jobs) out.push(reply(await collect(runChat(chat, job))));
    return { out, runs: seen.runs };
  } finally {
    await chat.dispose();
  }
}

Deno.test("llama run ahead: a lone sampled stream is drawn in C, token for token what the pipeline draws", async () => {
  for (const job of [sampled(), sampled({ sampling: { ...sampled().sampling, topK: 20, topP: 0.9 } })]) {
    const ahead = await inTurn(false, [job]);
    const own = await inTurn(true, [job]);
    assert.equal(own.runs, 0);
    assert.ok(ahead.runs >= 1, "the run ahead was used");
    assert.deepEqual(ahead.out, own.out);
    assert.equal(ahead.out[0].finishes[0].tokens, 40);
  }
});

Deno.test("llama run ahead: a stop sequence mid-run ends the reply where the pipeline's would, and the next turn reads on from the same cells", async () => {
  const first = (await inTurn(true, [sampled()])).out[0].texts[0];
  const stop = first.slice(12, 15);
  const stopped = sampled({ stop: [stop] });
  const said = first.slice(0, first.indexOf(stop));
  const next = sampled({
    messages: [...hi, { role: "assistant", content: said }, { role: "user", content: "And then?" }],
  });
  const ahead = await inTurn(false, [stopped, next]);
  const own = await inTurn(true, [stopped, next]);
  assert.deepEqual(ahead.out, own.out);
  assert.equal(ahead.out[0].texts[0], said);
  assert.equal(ahead.out[0].finishes[0].reason, "stop");
  assert.ok(ahead.out[1].cached[0] > 0, "the next turn reused the first's cells");
  assert.ok(ahead.runs >= 2);
});

Deno.test("llama run ahead: the end-of-sequence token ends a run as it ends the pipeline's draws; min_tokens masks it", async () => {
  // Greedy (the kernel's argmax) with a budget past the model's end, and sampled with a few tokens' minimum.
  const jobs = [
    chatJob(hi, { maxTokens: 200 }),
    sampled({ maxTokens: 200, minTokens: 3 }),
    sampled({ maxTokens: 30, minTokens: 0, ignoreEos: true }),
  ];
  const ahead = await inTurn(false, jobs);
  const own = await inTurn(true, jobs);
  assert.deepEqual(ahead.out, own.out);
  assert.ok(ahead.runs >= 3);
});

Deno.test("llama run ahead: a request arriving mid-run stops it; both replies are what each gets alone", async () => {
  const a = sampled({ maxTokens: 400, minTokens: 400 });
  const b = sampled({ seed: 9n, messages: [{ role: "user", content: "Something else" }] });
  const alone = (await inTurn(true, [a, b])).out;
  const chat = await load();
  const seen = watch(chat, false);
  try {
    let deltas = 0;
    let started!: () => void;
    const midway = new Promise<void>((resolve) => started = resolve);
    const first = (async () => {
      const out: ChatEvent[] = [];
      for await (const ev of runChat(chat, a)) {
        out.push(ev);
        if (ev.type === "delta" && ++deltas === 8) started();
      }
      return out;
    })();
    await midway;
    const runsBefore = seen.runs;
    const second = await collect(runChat(chat, b));
    const together = [reply(await first), reply(second)];
    assert.deepEqual(together.map((r) => [r.texts, r.finishes]), alone.map((r) => [r.texts, r.finishes]));
    assert.ok(runsBefore >= 1, "a ran ahead before b came");
    assert.ok(seen.runs > runsBefore, "a ran ahead again once b was done");
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama run ahead: n choices with a seed draw as without it", async () => {
  const job = sampled({ n: 3, maxTokens: 24, minTokens: 24 });
  const ahead = await inTurn(false, [job]);
  const own = await inTurn(true, [job]);
  assert.deepEqual(ahead.out, own.out);
  assert.ok(ahead.runs >= 1);
});

Deno.test("llama run ahead: a client leaving mid-run stops it, and the model serves the next request as before", async () => {
  const chat = await load();
  watch(chat, false);
  try {
    const ac = new AbortController();
    let deltas = 0;
    await assert.rejects(async () => {
      for await (
        const ev of runChat(chat, sampled({ maxTokens: 64, minTokens: 64 }), { signal: ac.signal })
      ) {
        if (ev.type === "delta" && ++deltas === 5) ac.abort();
      }
    });
    const after = reply(await collect(runChat(chat, sampled({ seed: 3n }))));
    const fresh = (await inTurn(true, [sampled({ seed: 3n })])).out[0];
    assert.deepEqual(after.texts, fresh.texts);
    assert.deepEqual(after.finishes, fresh.finishes);
  } finally {
    await chat.dispose();
  }
});

Deno.test("llama run ahead: none where the model's threads take every core; the reply is the same", async () => {
  const job = sampled();
  const own = await inTurn(true, [job]);
  const chat = await load(2, coreCount());
  try {
    assert.equal(chat.aheadWhenAlone, false);
    let runs = 0;
    const grant = chat.runAhead.bind(chat);
    chat.runAhead = (...a) => {
      const run = grant(...a);
      if (run) runs++;
      return run;
    };
    assert.deepEqual(reply(await collect(runChat(chat, job))), own.out[0]);
    assert.equal(runs, 0);
  } finally {
    await chat.dispose();
  }
});
