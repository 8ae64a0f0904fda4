// Benchmark of how the server answers other requests while chats generate: with 1, 4 and 8 streaming chats
// on the SmolLM2-135M-shaped model (q8 and q4, 2 threads; 32 tokens each, queued one after another per
// model), `GET /health` is polled every 10 ms (p50/p99/max) and a small embeddings request is sent again and
// again (MiniLM-L6 shape); its median latency is compared with the same request on the idle server, in the
// same run. Goals: /health p99 under 10 ms, embeddings within 2x of idle at 8 streams.
//
//   deno run -A bench/responsiveness_bench.ts [--threads 2] [--new-tokens 32]
import { parseArgs } from "node:util";
import { firstModelDir, median, percentile } from "./stats.ts";
import { ROOT, startBenchServer } from "./bench_server.ts";
const { values } = parseArgs({
  args: Deno.args,
  options: { threads: { type: "string", default: "2" }, "new-tokens": { type: "string", default: "32" } },
});
const chatDir = firstModelDir(ROOT, ["models/generated/bench/smollm2-135m-instruct"]);
const embedDir = firstModelDir(ROOT, [
  "models/generated/bench/all-minilm-l6-v2",
  "models/generated/embed-tiny",
]);

const { server, url, close } = await startBenchServer({
  "chat-q8": { task: "chat", path: chatDir, dtype: "q8", device: "cpu" },
  "chat-q4": { task: "chat", path: chatDir, dtype: "q4", device: "cpu" },
  embed: { task: "embedding", path: embedDir, dtype: "fp32", device: "cpu" },
}, [`--threads=${values.threads}`]);
const newTokens = Number(values["new-tokens"]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function timed(f: () => Promise<Response>): Promise<number> {
  const t0 = performance.now();
  const res = await f();
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`status ${res.status}`);
  return performance.now() - t0;
}

const health = () => fetch(`${url}/health`);
const embed = () =>
  fetch(`${url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "embed", input: "the quick brown fox jumps over the lazy dog" }),
  });
const chat = (model: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model,
      messages: [{ role: "user", content: "Tell me a long story about boats." }],
      stream: true,
      max_tokens: newTokens,
      ignore_eos: true,
    }),
  }).then((r) => r.text());

try {
  for (const id of ["chat-q8", "chat-q4", "embed"]) {
    await server.registry.load(server.registry.resolve(id, id === "embed" ? "embedding" : "chat"));
  }
  await embed().then((r) => r.arrayBuffer());
  const rows: string[] = [];
  for (const model of ["chat-q8", "chat-q4"]) {
    await chat(model); // warm
    for (const streams of [1, 4, 8]) {
      // Idle figures of this configuration, right before its loaded run.
      const idle: number[] = [];
      for (let i = 0; i < 20; i++) idle.push(await timed(embed));
      const healthMs: number[] = [];
      const embedMs: number[] = [];
      let done = false;
      const all = Promise.all(Array.from({ length: streams }, () => chat(model))).finally(() => done = true);
      await sleep(50);
      const poller = (async () => {
        while (!done) {
          healthMs.push(await timed(health));
          await sleep(10);
        }
      })();
      while (!done) embedMs.push(await timed(embed));
      await all;
      await poller;
      const h = healthMs.sort((a, b) => a - b);
      const idleMed = median(idle);
      const loaded = median(embedMs);
      rows.push(
        `| ${model} | ${streams} | ${h.length} | ${percentile(h, 50).toFixed(2)} | ${
          percentile(h, 99).toFixed(2)
        } | ` +
          `${h.at(-1)!.toFixed(2)} | ${idleMed.toFixed(2)} | ${loaded.toFixed(2)} | ${
            (loaded / idleMed).toFixed(2)
          }x |`,
      );
    }
  }
  console.log(
    [
      `Chat: ${chatDir} (threads ${values.threads}, ${newTokens} tokens per stream); embeddings: ${embedDir}.`,
      "",
      "| model | streams | /health samples | /health p50 ms | p99 ms | max ms | embeddings idle ms | " +
      "embeddings under load ms | ratio |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...rows,
      "",
      "Goals: /health p99 < 10 ms; embeddings under load within 2x of idle at 8 streams.",
    ].join("\n"),
  );
} finally {
  await close();
}
Deno.exit(0);
