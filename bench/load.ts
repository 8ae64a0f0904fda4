// Owns the load generator shared by the reliability test and `deno task bench`: N concurrent streaming chat
// requests or embedding requests against a server URL, each classified as ok (a correct, complete answer),
// 429 (with Retry-After) or a failure, with its latency. Loopback only; bounded by N.

import { percentile } from "./stats.ts";

const JSON_HEADERS = { "content-type": "application/json" };

export interface Outcome {
  kind: "ok" | "429" | "fail";
  status: number;
  seconds: number;
  detail?: string;
}

export interface LoadResult {
  outcomes: Outcome[];
  ok: number;
  rejected: number;
  failed: Outcome[];
  p50: number;
  p99: number;
  wallSeconds: number;
}

function summarize(outcomes: Outcome[], wallSeconds: number): LoadResult {
  const okTimes = outcomes.filter((o) => o.kind === "ok").map((o) => o.seconds).sort((a, b) => a - b);
  return {
    outcomes,
    ok: okTimes.length,
    rejected: outcomes.filter((o) => o.kind === "429").length,
    failed: outcomes.filter((o) => o.kind === "fail"),
    p50: percentile(okTimes, 50),
    p99: percentile(okTimes, 99),
    wallSeconds,
  };
}

async function classify(res: Response, started: number, check: (text: string) => string | undefined) {
  const text = await res.text();
  const seconds = (performance.now() - started) / 1000;
  if (res.status === 429) {
    const ra = res.headers.get("retry-after");
    return ra && Number(ra) >= 1
      ? { kind: "429" as const, status: 429, seconds }
      : { kind: "fail" as const, status: 429, seconds, detail: "429 without Retry-After" };
  }
  if (res.status !== 200) {
    return { kind: "fail" as const, status: res.status, seconds, detail: text.slice(0, 200) };
  }
  const bad = check(text);
  return bad
    ? { kind: "fail" as const, status: 200, seconds, detail: bad }
    : { kind: "ok" as const, status: 200, seconds };
}

/** Runs `n` requests at once, each timed and classified; a thrown error (connection lost) is a failure. */
async function concurrently(
  n: number,
  send: () => Promise<Response>,
  check: (text: string) => string | undefined,
): Promise<LoadResult> {
  const t0 = performance.now();
  const outcomes = await Promise.all(Array.from({ length: n }, async (): Promise<Outcome> => {
    const started = performance.now();
    try {
      return await classify(await send(), started, check);
    } catch (e) {
      return { kind: "fail", status: 0, seconds: (performance.now() - started) / 1000, detail: String(e) };
    }
  }));
  return summarize(outcomes, (performance.now() - t0) / 1000);
}

/** `n` concurrent streamed chat completions; each must stream `expected` and end with [DONE]. */
export function chatStreamLoad(
  url: string,
  n: number,
  body: Record<string, unknown>,
  expected: string,
): Promise<LoadResult> {
  const payload = JSON.stringify({ ...body, stream: true });
  return concurrently(
    n,
    () => fetch(`${url}/v1/chat/completions`, { method: "POST", headers: JSON_HEADERS, body: payload }),
    (text) => {
      const frames = text.split("\n\n").filter(Boolean);
      if (frames.at(-1) !== "data: [DONE]") return "stream did not end with [DONE]";
      let content = "";
      for (const f of frames.slice(0, -1)) {
        const ev = JSON.parse(f.slice(6));
        if (ev.error) return `error frame: ${ev.error.message}`;
        content += ev.choices?.[0]?.delta?.content ?? "";
      }
      return content === expected ? undefined : `content ${JSON.stringify(content)}`;
    },
  );
}

/** `n` concurrent embedding requests of `inputs`; each must return that many vectors in order. */
export function embeddingLoad(url: string, n: number, model: string, inputs: string[]): Promise<LoadResult> {
  const payload = JSON.stringify({ model, input: inputs });
  return concurrently(
    n,
    () => fetch(`${url}/v1/embeddings`, { method: "POST", headers: JSON_HEADERS, body: payload }),
    (text) => {
      const data = JSON.parse(text).data as { index: number; embedding: number[] }[];
      if (data.length !== inputs.length) return `got ${data.length} vectors`;
      if (data.some((d, i) => d.index !== i || !d.embedding.every(Number.isFinite))) return "bad vectors";
      return undefined;
    },
  );
}
