// Owns the benchmarks' streaming chat client: one POST /v1/chat/completions with stream=true read with fetch,
// timed from sending the request to the first content chunk and to the finish chunk, with the usage figures.
export interface StreamTiming {
  /** ms from sending the request to the first content / the finish chunk. */
  ttft: number;
  total: number;
  /** Chunks that carried content, and ms from the first of them to the last: the stream's own decode pace. */
  chunks: number;
  span: number;
  tokens: number;
  promptTokens: number;
  cachedTokens: number;
  text: string;
}

export async function streamChat(url: string, body: unknown): Promise<StreamTiming> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`server answered ${res.status}: ${await res.text()}`);
  let first = 0;
  let last = 0;
  let chunks = 0;
  let end = 0;
  let text = "";
  let tokens = 0;
  let promptTokens = 0;
  let cachedTokens = 0;
  let buf = "";
  // The body's bytes decoded here rather than through a TextDecoderStream: one stream stage less per chunk on
  // the thread the server shares with this client (the benchmark measures the server, not its client).
  const decoder = new TextDecoder();
  for await (const bytes of res.body!) {
    buf += decoder.decode(bytes, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const data = buf.slice(6, i);
      buf = buf.slice(i + 2);
      if (data === "[DONE]") continue;
      const ev = JSON.parse(data);
      const choice = ev.choices[0];
      if (choice?.delta?.content) {
        last = performance.now();
        first ||= last;
        chunks++;
        text += choice.delta.content;
      }
      if (choice?.finish_reason) end = performance.now();
      if (ev.usage) {
        tokens = ev.usage.completion_tokens;
        promptTokens = ev.usage.prompt_tokens;
        cachedTokens = ev.usage.prompt_tokens_details?.cached_tokens ?? 0;
      }
    }
  }
  return {
    ttft: first - t0,
    total: end - t0,
    chunks,
    span: last - first,
    tokens,
    promptTokens,
    cachedTokens,
    text,
  };
}
