// Owns the load the peer benchmark puts on a server, the same for both: request-unique prompts, streamed chats
// timed per stream (first and last content chunk, every stream checked to have produced its tokens), a burst
// of N such chats arriving together, a burst of embedding requests, and a /health probe running alongside
// (its latencies are the server's responsiveness under that load).
import { percentile } from "./stats.ts";

const VOCAB =
  "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa " +
  "quebec romeo sierra tango uniform victor whiskey xray yankee zulu river stone cloud maple";

/** A request-unique text: the id spelled first, so no two prompts share more than the template's prefix. */
export function words(id: number, n: number): string {
  const w = VOCAB.split(" ");
  const out = [`request ${id} ${(id * 7919) % 10007}:`];
  let x = id * 2654435761 >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >>> 17, x ^= x << 5;
    out.push(w[(x >>> 0) % w.length]);
  }
  return out.join(" ");
}

/**
 * What a burst's requests ask for. `mixed`: sampled streams, each with a system message of its own, measured
 * after a churn of such requests of different lengths, which finish at different times: the slots a burst
 * gets are the ones a server's slot choice leaves it (see burst's `churn`).
 */
export type Workload = "sampled" | "greedy" | "json" | "mixed";

/** A schema no 64-token answer can complete (so both servers generate exactly max_tokens). */
const LONG_LIST = {
  type: "object",
  properties: { items: { type: "array", items: { type: "string" }, minItems: 500 } },
  required: ["items"],
  additionalProperties: false,
};

export interface Stream {
  ttft: number;
  /** ms from the first to the last content chunk. */
  span: number;
  tokens: number;
  chunks: number;
  promptTokens: number;
}

export async function chat(
  url: string,
  text: string,
  maxTokens: number,
  seed: number,
  workload: Workload = "sampled",
): Promise<Stream> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "bench",
      // A system message of its own (no prefix shared with other requests beyond the template's first tokens).
      messages: workload === "mixed"
        ? [{ role: "system", content: `Session ${seed}.` }, { role: "user", content: text }]
        : [{ role: "user", content: text }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: maxTokens,
      temperature: workload === "greedy" ? 0 : 1,
      seed,
      ...(workload === "json"
        ? { response_format: { type: "json_schema", json_schema: { name: "list", schema: LONG_LIST } } }
        : { ignore_eos: true }),
    }),
  });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let buf = "";
  let first = 0;
  let last = 0;
  let chunks = 0;
  let tokens = 0;
  let promptTokens = 0;
  for await (const bytes of res.body!) {
    buf += decoder.decode(bytes, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 2);
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      const ev = JSON.parse(line.slice(6));
      const delta = ev.choices?.[0]?.delta;
      if (delta?.content || delta?.reasoning_content) {
        const now = performance.now();
        first ||= now;
        last = now;
        chunks++;
      }
      if (ev.usage) {
        tokens = ev.usage.completion_tokens;
        promptTokens = ev.usage.prompt_tokens;
      }
    }
  }
  tokens ||= chunks;
  // A constrained answer may end early where a server's grammar lets it (llama-server's did, streamed, once in
  // eight or sixteen streams, after 25-35 tokens of a schema needing 500 items); its rates count the tokens it
  // did produce.
  const least = workload === "json" ? 1 : maxTokens;
  if (tokens < least || tokens > maxTokens) {
    throw new Error(`${url}: a stream produced ${tokens} tokens, not ${maxTokens}`);
  }
  return { ttft: (first || performance.now()) - t0, span: last - first, tokens, chunks, promptTokens };
}

/**
 * CPU time (ms) process `pid` spends per /health request when polled every 20 ms with nothing else running, as
 * the probe above polls (Linux: every thread's run time from /proc/<pid>/task/<tid>/schedstat; NaN elsewhere).
 * A request that wakes an idle server costs more than one of many back to back (caches gone cold), and these
 * are the ones a probe sends, on the cores a model decodes on.
 */
export async function healthCpu(url: string, pid: number, requests = 250): Promise<number> {
  const cpu = () => {
    let ns = 0;
    for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/schedstat`).split(" ")[0]);
      } catch {
        // a thread that ended meanwhile
      }
    }
    return ns / 1e6;
  };
  try {
    cpu();
  } catch {
    return NaN;
  }
  const before = cpu();
  for (let i = 0; i < requests; i++) {
    const r = await fetch(`${url}/health`);
    await r.body?.cancel();
    await new Promise((r) => setTimeout(r, 20));
  }
  return (cpu() - before) / requests;
}

/** Polls /health every 20 ms until stopped; the latencies in ms. */
export function healthProbe(url: string): { stop(): Promise<number[]> } {
  const times: number[] = [];
  let running = true;
  let done: Promise<void> | null = null;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const r = await fetch(`${url}/health`);
        await r.body?.cancel();
        times.push(performance.now() - t0);
      } catch {
        times.push(Infinity); // no answer at all counts as the worst latency
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await (done ??= loop);
      return times;
    },
  };
}

export interface BurstResult {
  /** Mean over streams of (tokens - 1) / span; NaN when a stream printed fewer than two chunks. */
  decode: number;
  aggregate: number;
  ttftP50: number;
  ttftMax: number;
  health: number[];
}

/**
 * N chats arriving together, each with a prompt of its own; /health probed all the while. First, not
 * measured, `churn` chats of 4 to 49 new tokens arriving together (short prompts of their own), so slots are
 * left in an order other than their ids', as a server's traffic leaves them.
 */
export async function burst(
  url: string,
  n: number,
  ids: () => number,
  promptWords: number,
  newTokens: number,
  workload: Workload,
  churn = 0,
): Promise<BurstResult> {
  await Promise.all(
    Array.from({ length: churn }, (_, i) => {
      const id = ids();
      return chat(url, words(id, 20), 4 + ((i * 7) % 16) * 3, id, "mixed");
    }),
  );
  const probe = healthProbe(url);
  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: n }, () => {
      const id = ids();
      return chat(url, words(id, promptWords), newTokens, id, workload);
    }),
  ).finally(() => probe.stop());
  const wall = (performance.now() - t0) / 1000;
  const health = await probe.stop();
  const ttfts = results.map((r) => r.ttft).sort((a, b) => a - b);
  // A stream needs two printed chunks for a span (greedy output on random weights may print nothing).
  const timed = results.filter((r) => r.chunks >= 2 && r.span > 0);
  const decode = timed.map((r) => (r.tokens - 1) / (r.span / 1000));
  return {
    decode: timed.length === results.length ? decode.reduce((a, b) => a + b, 0) / decode.length : NaN,
    aggregate: results.reduce((a, r) => a + r.tokens, 0) / wall,
    ttftP50: percentile(ttfts, 50),
    ttftMax: ttfts.at(-1)!,
    health,
  };
}

/** `n` embedding requests of one input each, arriving together, `repeat` times; inputs per second. */
export async function embeddingBurst(
  url: string,
  n: number,
  repeat: number,
  ids: () => number,
  inputWords: number,
): Promise<{ perSecond: number; health: number[] }> {
  const probe = healthProbe(url);
  const t0 = performance.now();
  try {
    await embeddingRequests(url, n, repeat, ids, inputWords);
  } finally {
    await probe.stop();
  }
  const seconds = (performance.now() - t0) / 1000;
  return { perSecond: (n * repeat) / seconds, health: await probe.stop() };
}

async function embeddingRequests(
  url: string,
  n: number,
  repeat: number,
  ids: () => number,
  inputWords: number,
) {
  for (let r = 0; r < repeat; r++) {
    await Promise.all(Array.from({ length: n }, async () => {
      const res = await fetch(`${url}/v1/embeddings`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "bench", input: words(ids(), inputWords) }),
      });
      const body = await res.json();
      if (!res.ok || !Array.isArray(body.data?.[0]?.embedding)) {
        throw new Error(`${url}: embeddings ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      }
    }));
  }
}
