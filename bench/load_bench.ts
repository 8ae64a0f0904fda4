// Load benchmark (issue 9): latency percentiles of 64 concurrent streaming chats and 64 concurrent embedding
// requests against one server process on the generated tiny models, with a sequential single request as the
// baseline measured in the same run. Prints a markdown table.
import { chatStreamLoad, embeddingLoad, type LoadResult } from "./load.ts";
import { spawnServer } from "../tests/helpers.ts";

const server = await spawnServer({ flags: ["--queue-size=128"] });
const chat = { model: "chat-tiny", messages: [{ role: "user", content: "Hi there!" }] };
const texts = ["the quick brown fox jumps over the lazy dog", "load testing a local server"];
try {
  await chatStreamLoad(server.url, 2, chat, "Hello from chat-tiny!");
  await embeddingLoad(server.url, 2, "embed-tiny", texts);
  const rows: [string, LoadResult, LoadResult][] = [];
  const ms = (s: number) => (s * 1000).toFixed(1);
  const baseChat = await chatStreamLoad(server.url, 1, chat, "Hello from chat-tiny!");
  const loadChat = await chatStreamLoad(server.url, 64, chat, "Hello from chat-tiny!");
  rows.push(["chat stream (chat-tiny)", baseChat, loadChat]);
  const baseEmb = await embeddingLoad(server.url, 1, "embed-tiny", texts);
  const loadEmb = await embeddingLoad(server.url, 64, "embed-tiny", texts);
  rows.push(["embeddings, 2 inputs (embed-tiny)", baseEmb, loadEmb]);
  console.log(
    "| workload | alone (ms) | 64 concurrent p50 (ms) | p99 (ms) | ok | 429 | failed | requests/s |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const [name, base, load] of rows) {
    console.log(
      `| ${name} | ${ms(base.p50)} | ${ms(load.p50)} | ${
        ms(load.p99)
      } | ${load.ok} | ${load.rejected} | ${load.failed.length} | ${
        (load.ok / load.wallSeconds).toFixed(0)
      } |`,
    );
  }
} finally {
  await server.stop();
}
