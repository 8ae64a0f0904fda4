// Tests the chat pipeline on a scripted fake backend: exact logits in, exact events out. The fake's vocabulary
// is a handful of text pieces; its logits put all mass on the next piece of a script (or on a fixed row), and
// it records what the pipeline asked of it (prefills, steps, forks, closes), so sequence handling is checked
// too: every sequence opened is closed, whatever way the generation ends.
import assert from "node:assert/strict";
import { ChatPromptError, InvalidRequest } from "../errors.ts";
import type {
  ChatBackend,
  ChatEvent,
  ChatMessage,
  ModelEntry,
  RenderOptions,
  SequenceId,
} from "../engines/types.ts";
import { runChat } from "./pipeline.ts";
import { chatJob, collect } from "../../tests/support/chat_job.ts";

const PIECES = ["<eos>", "Hel", "lo", " wor", "ld", "!", "\u00e9", "<think>", "</think>", "\n\n"];
const EOS = 0;
/** What the prompt event reports sampling uses: the fake's defaults (greedy). */
const GREEDY = { temperature: 0, topP: 1 };

/** A backend whose next token follows `script` (by position in the generated text), then end-of-sequence. */
class ScriptedBackend implements ChatBackend {
  readonly entry = { id: "fake" } as ModelEntry;
  readonly backend = "scripted";
  readonly vocabSize = PIECES.length;
  readonly eosIds = new Set([EOS]);
  readonly tokenizerJson = null;
  readonly defaults = { temperature: 0, topP: 1, topK: 0 };
  readonly calls: string[] = [];
  readonly open_ = new Set<SequenceId>();
  #next = 1;
  #pos = new Map<SequenceId, number>();

  constructor(
    readonly script: number[],
    readonly contextLength = 64,
    readonly promptLength = 3,
    readonly chatTemplate: string | null = null,
  ) {}

  readonly renderOpts: RenderOptions[] = [];
  render(messages: ChatMessage[], _tools?: unknown, opts: RenderOptions = {}): number[] {
    this.renderOpts.push(opts);
    if (messages.some((m) => m.role === "tool")) throw new ChatPromptError("no tools here");
    const ids = Array.from({ length: this.promptLength }, (_, i) => 1 + (i % 5));
    // A template that closes the block itself when thinking is off (Qwen3's enable_thinking).
    return opts.thinking === false ? [...ids, 7, 9, 8, 9] : ids;
  }
  /** Pieces are whole words here: a text is the pieces it spells, longest first. */
  encode(text: string, addSpecial: boolean): number[] {
    const out: number[] = addSpecial ? [5] : [];
    for (let i = 0; i < text.length;) {
      const id = PIECES.reduce(
        (best, p, t) =>
          t > 0 && p && text.startsWith(p, i) && p.length > (PIECES[best]?.length ?? 0) ? t : best,
        -1,
      );
      if (id < 0) throw new Error(`no piece at ${text.slice(i)}`);
      out.push(id);
      i += PIECES[id].length;
    }
    return out;
  }
  tokenId(piece: string): number | undefined {
    const id = PIECES.indexOf(piece);
    return id < 0 ? undefined : id;
  }
  decode(ids: number[]): string {
    return ids.map((id) => (id === EOS ? "" : PIECES[id])).join("");
  }
  tokenText(id: number) {
    return { text: PIECES[id], bytes: [...new TextEncoder().encode(PIECES[id])] };
  }
  open(): SequenceId {
    const id = this.#next++;
    this.open_.add(id);
    this.#pos.set(id, 0);
    return id;
  }
  fork(seq: SequenceId): SequenceId {
    const id = this.open();
    this.#pos.set(id, this.#pos.get(seq)!);
    this.calls.push(`fork ${seq}->${id}`);
    return id;
  }
  close(seq: SequenceId): void {
    this.open_.delete(seq);
    this.calls.push(`close ${seq}`);
  }
  /** One-hot-ish logits: the scripted token far ahead, the others at 0 (so logprobs are exact). */
  #logits(seq: SequenceId): Float32Array {
    const pos = this.#pos.get(seq)!;
    const row = new Float32Array(this.vocabSize);
    row[pos < this.script.length ? this.script[pos] : EOS] = 10;
    return row;
  }
  prefill(seq: SequenceId, ids: number[]) {
    this.calls.push(`prefill ${seq} ${ids.length}`);
    return Promise.resolve({ logits: this.#logits(seq), cachedTokens: 0 });
  }
  step(seq: SequenceId, token: number) {
    this.calls.push(`step ${seq} ${token}`);
    this.#pos.set(seq, this.#pos.get(seq)! + 1);
    return Promise.resolve(this.#logits(seq));
  }
  dispose() {
    return Promise.resolve();
  }
}

const hi: ChatMessage[] = [{ role: "user", content: "hi" }];
const HELLO = [1, 2, 3, 4, 5]; // "Hello world!"

function content(events: ChatEvent[], choice = 0): string {
  return events.map((e) => (e.type === "delta" && e.choice === choice ? e.delta.content ?? "" : "")).join("");
}

Deno.test("pipeline: the next step starts before a token's event, unless the backend's steps block", async () => {
  for (const blocking of [false, true]) {
    const b = new (class extends ScriptedBackend {
      readonly stepsBlock = blocking;
    })(HELLO);
    // Interleave the backend's calls with the events as the consumer sees them.
    const order: string[] = [];
    const calls = b.calls;
    b.calls.push = (...items: string[]) => (order.push(...items), Array.prototype.push.apply(calls, items));
    for await (const ev of runChat(b, chatJob(hi))) if (ev.type === "delta") order.push(`delta ${ev.tokens}`);
    const firstSteps = order.slice(1, 5);
    assert.deepEqual(
      firstSteps,
      blocking
        ? ["delta 1", "step 1 1", "delta 2", "step 1 2"]
        : ["step 1 1", "delta 1", "step 1 2", "delta 2"],
      `stepsBlock ${blocking}`,
    );
    // Same text either way.
    assert.equal(order.filter((o) => o.startsWith("delta")).length, 5);
  }
});

Deno.test("pipeline: greedy script in, exact events out; one prefill, one step per token, all closed", async () => {
  const b = new ScriptedBackend(HELLO);
  const events = await collect(runChat(b, chatJob(hi)));
  assert.deepEqual(events, [
    { type: "prompt", promptTokens: 3, cachedTokens: 0, sampling: GREEDY },
    { type: "start", choice: 0 },
    { type: "delta", choice: 0, delta: { content: "Hel" }, logprobs: null, tokens: 1 },
    { type: "delta", choice: 0, delta: { content: "lo" }, logprobs: null, tokens: 2 },
    { type: "delta", choice: 0, delta: { content: " wor" }, logprobs: null, tokens: 3 },
    { type: "delta", choice: 0, delta: { content: "ld" }, logprobs: null, tokens: 4 },
    { type: "delta", choice: 0, delta: { content: "!" }, logprobs: null, tokens: 5 },
    { type: "finish", choice: 0, reason: "stop", completionTokens: 6, reasoningTokens: 0 },
  ]);
  assert.deepEqual(b.calls, [
    "prefill 1 3",
    "step 1 1",
    "step 1 2",
    "step 1 3",
    "step 1 4",
    "step 1 5",
    "close 1",
  ]);
  assert.equal(b.open_.size, 0);
});

Deno.test("pipeline: max tokens, stop sequences, logprobs (one entry per generated token)", async () => {
  const b = new ScriptedBackend(HELLO);
  const short = await collect(runChat(b, chatJob(hi, { maxTokens: 2 })));
  assert.equal(content(short), "Hello");
  assert.deepEqual(short.at(-1), {
    type: "finish",
    choice: 0,
    reason: "length",
    completionTokens: 2,
    reasoningTokens: 0,
  });

  // Entries equal completion tokens when cut by the budget or a stop sequence too.
  for (const opts of [{ maxTokens: 2 }, { stop: ["wor"] }, { stop: ["ld"] }]) {
    const evs = await collect(runChat(new ScriptedBackend(HELLO), chatJob(hi, { ...opts, logprobs: 0 })));
    const n = evs.flatMap((e) => (e.type === "delta" ? e.logprobs ?? [] : [])).length;
    const fin = evs.at(-1)!;
    assert.ok(fin.type === "finish" && fin.completionTokens === n, `${JSON.stringify(opts)}: ${n} entries`);
  }

  const stopped = await collect(runChat(new ScriptedBackend(HELLO), chatJob(hi, { stop: ["ld", "wor"] })));
  assert.equal(content(stopped), "Hello ");
  // The finish names the stop sequence that matched (Anthropic's stop_sequence).
  assert.deepEqual(stopped.at(-1), {
    type: "finish",
    choice: 0,
    reason: "stop",
    completionTokens: 3,
    reasoningTokens: 0,
    stopSequence: "wor",
  });

  const lp = await collect(runChat(new ScriptedBackend(HELLO), chatJob(hi, { logprobs: 1 })));
  const entries = lp.flatMap((e) => (e.type === "delta" ? e.logprobs ?? [] : []));
  assert.deepEqual(entries.map((e) => e.token), ["Hel", "lo", " wor", "ld", "!", "<eos>"]);
  const finished = lp.at(-1)!;
  assert.ok(finished.type === "finish" && finished.completionTokens === entries.length);
  // 10 against the other pieces' zeros: log(e^10 / (e^10 + vocab - 1)).
  const expected = 10 - Math.log(Math.exp(10) + PIECES.length - 1);
  for (const e of entries) {
    assert.ok(Math.abs(e.logprob - expected) < 1e-5, `${e.logprob} vs ${expected}`);
    // (the scripted end-of-sequence scores like every other piece)
    assert.equal(e.top.length, 1);
    assert.equal(e.top[0].token, e.token);
  }
});

Deno.test("pipeline: n choices fork the prefilled sequence; each choice gets the same script", async () => {
  const b = new ScriptedBackend([1, 2]);
  const events = await collect(runChat(b, chatJob(hi, { n: 3 })));
  assert.deepEqual([0, 1, 2].map((c) => content(events, c)), ["Hello", "Hello", "Hello"]);
  assert.equal(b.calls.filter((c) => c.startsWith("prefill")).length, 1, "one prefill");
  assert.deepEqual(b.calls.filter((c) => c.startsWith("fork")), ["fork 1->2", "fork 1->3"]);
  assert.equal(b.open_.size, 0, "every sequence closed");
  const finishes = events.filter((e) => e.type === "finish");
  assert.deepEqual(finishes.map((f) => f.type === "finish" && f.completionTokens), [3, 3, 3]);
});

Deno.test("pipeline: refusals before any compute: context, logit_bias, template", async () => {
  const full = new ScriptedBackend(HELLO, 8, 6);
  await assert.rejects(collect(runChat(full, chatJob(hi, { maxTokens: 3 }))), (e: unknown) => {
    assert.ok(e instanceof InvalidRequest);
    assert.equal(e.code, "context_length_exceeded");
    assert.equal(e.param, "messages");
    assert.match(e.message, /maximum context length is 8 tokens.*requested 9 tokens \(6 in the messages/);
    return true;
  });
  const job = chatJob(hi, { maxTokens: null });
  assert.equal((await collect(runChat(new ScriptedBackend([1, 1, 1, 1], 8, 6), job))).at(-1)?.type, "finish");

  const bias = chatJob(hi);
  bias.sampling.logitBias = { "10": 5 };
  await assert.rejects(
    collect(runChat(new ScriptedBackend(HELLO), bias)),
    (e: unknown) => e instanceof InvalidRequest && e.param === "logit_bias" && /ids 0 to 9/.test(e.message),
  );
  const b = new ScriptedBackend(HELLO);
  await assert.rejects(
    collect(runChat(b, chatJob([{ role: "tool", content: "x", toolCallId: "c" }]))),
    (e: unknown) => e instanceof InvalidRequest && e.param === "messages" && /no tools here/.test(e.message),
  );
  assert.deepEqual(b.calls, [], "nothing ran");
});

Deno.test("pipeline: logit_bias steers, ignore_eos runs to the budget, an abort stops within a token", async () => {
  const biased = chatJob(hi);
  biased.sampling.logitBias = { "1": -100, "6": 20 };
  const steered = await collect(runChat(new ScriptedBackend(HELLO), { ...biased, maxTokens: 2 }));
  assert.equal(content(steered), "\u00e9\u00e9");

  const long = await collect(
    runChat(new ScriptedBackend([1]), chatJob(hi, { ignoreEos: true, maxTokens: 4 })),
  );
  assert.deepEqual(long.at(-1), {
    type: "finish",
    choice: 0,
    reason: "length",
    completionTokens: 4,
    reasoningTokens: 0,
  });

  const b = new ScriptedBackend(Array(50).fill(1));
  const ctrl = new AbortController();
  let deltas = 0;
  await assert.rejects(
    (async () => {
      for await (const ev of runChat(b, chatJob(hi, { maxTokens: 40 }), { signal: ctrl.signal })) {
        if (ev.type === "delta" && ++deltas === 2) ctrl.abort(new DOMException("gone", "AbortError"));
      }
    })(),
    (e: unknown) => (e as Error).name === "AbortError",
  );
  assert.equal(deltas, 2);
  assert.equal(b.calls.filter((c) => c.startsWith("step")).length, 2, "no step after the abort");
  assert.equal(b.open_.size, 0);
});

function reasoning(events: ChatEvent[]): string {
  return events.map((e) => (e.type === "delta" ? e.delta.reasoning ?? "" : "")).join("");
}

const THINKING_TEMPLATE = "{{ '<think>' }}...{{ '</think>' }}";
// "<think>", " wor", "ld", "</think>", "\n\n", "Hel", "lo", "!"
const THOUGHT = [7, 3, 4, 8, 9, 1, 2, 5];

Deno.test("pipeline: a thinking block goes to reasoning (trimmed), never to content; its tokens are counted", async () => {
  const events = await collect(runChat(new ScriptedBackend(THOUGHT, 64, 3, THINKING_TEMPLATE), chatJob(hi)));
  assert.equal(reasoning(events), "world");
  assert.equal(content(events), "Hello!");
  assert.deepEqual(events.at(-1), {
    type: "finish",
    choice: 0,
    reason: "stop",
    completionTokens: 9,
    reasoningTokens: 4,
  });
  // Streamed as it comes: the reasoning delta arrives before any content.
  const kinds = events.flatMap((e) => e.type === "delta" ? Object.keys(e.delta) : []);
  assert.equal(kinds.indexOf("reasoning"), 0);
  assert.ok(kinds.lastIndexOf("reasoning") < kinds.indexOf("content"));
});

Deno.test("pipeline: reasoning effort goes to a template with the switch, and is reported unused otherwise", async () => {
  const plain = await collect(runChat(new ScriptedBackend(HELLO), chatJob(hi, { reasoningEffort: "high" })));
  assert.deepEqual((plain[0] as { unused?: string[] }).unused, ["reasoningEffort"]);
  const knob = new ScriptedBackend(HELLO, 64, 3, "{{ 'Reasoning: ' + reasoning_effort }}");
  const events = await collect(runChat(knob, chatJob(hi, { reasoningEffort: "high" })));
  assert.equal((events[0] as { unused?: string[] }).unused, undefined);
  assert.deepEqual(knob.renderOpts.at(-1), { reasoningEffort: "high" });
  const none = await collect(runChat(new ScriptedBackend(HELLO), chatJob(hi)));
  assert.equal((none[0] as { unused?: string[] }).unused, undefined);
});

Deno.test("pipeline: a thinking budget closes the block once it is spent", async () => {
  const b = new ScriptedBackend(THOUGHT, 64, 3, THINKING_TEMPLATE);
  const events = await collect(runChat(b, chatJob(hi, { thinkingBudget: 2, maxTokens: 4 })));
  // "<think>", " wor", then "</think>" where the script says "ld".
  assert.equal(reasoning(events), "wor");
  const fin = events.at(-1)!;
  assert.ok(fin.type === "finish" && fin.reasoningTokens === 3, JSON.stringify(fin));
  const unbounded = await collect(
    runChat(new ScriptedBackend(THOUGHT, 64, 3, THINKING_TEMPLATE), chatJob(hi)),
  );
  assert.equal(reasoning(unbounded), "world");
});

Deno.test("pipeline: without a thinking template the tags are the model's text; cut mid-thought is reasoning", async () => {
  const plain = await collect(runChat(new ScriptedBackend(THOUGHT), chatJob(hi)));
  assert.equal(content(plain), "<think> world</think>\n\nHello!");
  assert.equal(reasoning(plain), "");
  const cut = await collect(
    runChat(new ScriptedBackend(THOUGHT, 64, 3, THINKING_TEMPLATE), chatJob(hi, { maxTokens: 3 })),
  );
  assert.equal(reasoning(cut), "world");
  assert.equal(content(cut), "");
  assert.deepEqual(cut.at(-1), {
    type: "finish",
    choice: 0,
    reason: "length",
    completionTokens: 3,
    reasoningTokens: 3,
  });
});

Deno.test("pipeline: thinking off renders enable_thinking false; the closed block in the prompt is not output", async () => {
  const b = new ScriptedBackend([1, 2, 5], 64, 3, THINKING_TEMPLATE);
  const events = await collect(runChat(b, chatJob(hi, { thinking: false })));
  assert.deepEqual(events[0], { type: "prompt", promptTokens: 7, cachedTokens: 0, sampling: GREEDY });
  assert.equal(content(events), "Hello!");
  assert.equal(reasoning(events), "");
  // A template that opens the block in its prompt (DeepSeek-R1 style): the reply starts inside it.
  const open = new ScriptedBackend([3, 4, 8, 1, 2], 64, 3, THINKING_TEMPLATE);
  open.render = () => [1, 7];
  const r1 = await collect(runChat(open, chatJob(hi)));
  assert.equal(reasoning(r1), "world");
  assert.equal(content(r1), "Hello");
});

Deno.test("pipeline: a raw prompt is encoded without a template; echo reports its text and its logprobs", async () => {
  const b = new ScriptedBackend(HELLO);
  const job = chatJob(hi, { prompt: { text: "Hello" }, echo: true, logprobs: 1, maxTokens: 2 });
  const events = await collect(runChat(b, job));
  const prompt = events[0];
  assert.ok(prompt.type === "prompt");
  assert.equal(prompt.promptTokens, 3); // "!" (the fake's BOS), "Hel", "lo"
  assert.equal(prompt.echo?.text, "!Hello");
  assert.deepEqual(prompt.echo?.tokens, ["!", "Hel", "lo"]);
  const lps = prompt.echo!.logprobs!;
  assert.equal(lps[0], null);
  // The fake's logits put 10 on the script's next token and 0 elsewhere: "Hel" was its pick, and so was
  // "lo" (its script moves one piece per step).
  const z = Math.log(Math.exp(10) + PIECES.length - 1);
  assert.ok(Math.abs(lps[1]!.logprob - (10 - z)) < 1e-5);
  assert.ok(Math.abs(lps[2]!.logprob - (10 - z)) < 1e-5);
  assert.deepEqual(lps.slice(1).map((lp) => [lp!.token, lp!.top[0].token]), [["Hel", "Hel"], ["lo", "lo"]]);
  assert.deepEqual(b.calls.slice(0, 3), ["prefill 1 1", "step 1 1", "step 1 2"]);
  const ids = await collect(runChat(new ScriptedBackend(HELLO), chatJob(hi, { prompt: { ids: [1, 2] } })));
  assert.deepEqual(ids[0], { type: "prompt", promptTokens: 2, cachedTokens: 0, sampling: GREEDY });
  await assert.rejects(
    collect(runChat(new ScriptedBackend(HELLO), chatJob(hi, { prompt: { ids: [99] } }))),
    (e) => e instanceof InvalidRequest && e.param === "prompt",
  );
});

Deno.test("pipeline: suffix needs FIM tokens (400 naming suffix), and builds prefix-suffix-middle when present", async () => {
  await assert.rejects(
    collect(runChat(new ScriptedBackend(HELLO), chatJob(hi, { prompt: { text: "Hel", suffix: "!" } }))),
    (e) => e instanceof InvalidRequest && e.param === "suffix" && e.code === "unsupported_value",
  );
  const b = new ScriptedBackend(HELLO);
  const fim = new Map([["<|fim_prefix|>", 7], ["<|fim_suffix|>", 8], ["<|fim_middle|>", 9]]);
  b.tokenId = (p) => fim.get(p);
  let seen: number[] = [];
  const prefill = b.prefill.bind(b);
  b.prefill = (seq, ids) => (seen = ids, prefill(seq, ids));
  await collect(runChat(b, chatJob(hi, { prompt: { text: "Hel", suffix: "!" } })));
  assert.deepEqual(seen, [7, 1, 8, 5, 9]);
});
