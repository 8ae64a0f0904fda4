// Benchmark of the process boundary (issue 28): the same models served by two servers in one run, one whose
// models compute in runner processes (--isolation=process, the default) and one whose models compute in
// worker threads of the server's process (--isolation=thread, how every model ran before), streamed over HTTP
// with distinct prompts (no cached prefix), seeded sampling at temperature 1, 1 and 4 streams at once. Time to
// first token and decode tokens/s (extra tokens over extra time between two lengths, so fixed costs cancel),
// rounds interleaved with alternating order; ratios are process / thread. Goal: within 3% on both. Also the
// resident memory of each runner process.
//
//   deno run -A bench/isolation_bench.ts [--rounds 8] [--threads 2] [--new-tokens 64] [--runner-nice 5]
//   ... --same: both servers in runner processes, an A/A run giving the noise floor the ratios stand against
import { parseArgs } from "node:util";
import { join } from "node:path";
import { parseConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { type RunningServer, startServer } from "../src/server.ts";
import { builtinLoaders } from "../src/loaders.ts";
import { median } from "./stats.ts";
import { streamChat } from "./sse_client.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const { values } = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "8" },
    threads: { type: "string", default: "2" },
    "new-tokens": { type: "string", default: "64" },
    /** Comma-separated model ids of MODELS to run (default: all). */
    only: { type: "string" },
    streams: { type: "string", default: "1,4" },
    /** The runner processes' nice increment (default: the server's). */
    "runner-nice": { type: "string" },
    /**
     * Both servers in runner processes (the "thread" column is a second process-mode server): the run's own
     * noise floor, what two identical servers differ by on this machine.
     */
    same: { type: "boolean", default: false },
  },
});
const rounds = Number(values.rounds);
const newTokens = Number(values["new-tokens"]);
const ALL_MODELS = {
  "smollm2-gguf-q8": {
    task: "chat",
    path: "generated/bench/smollm2-135m-instruct/gguf/smollm2-135m-Q8_0.gguf",
  },
  "smollm2-onnx-q8": {
    task: "chat",
    path: "generated/bench/smollm2-135m-instruct",
    dtype: "q8",
    device: "cpu",
  },
};
const MODELS = Object.fromEntries(
  Object.entries(ALL_MODELS).filter(([id]) => !values.only || values.only.split(",").includes(id)),
);
const WORDS = (
  "the people of the river town build small boats from old wood and paint them blue before the summer " +
  "market where farmers sell fresh bread cheese apples honey and warm soup to travelers who arrive early"
).split(" ");

const tmp = await Deno.makeTempDir({ prefix: "isolation-bench-" });
await Deno.writeTextFile(join(tmp, "manifest.json"), JSON.stringify({ models: MODELS }));
type Mode = "process" | "thread";
const servers = {} as Record<Mode, RunningServer>;
for (const mode of ["process", "thread"] as Mode[]) {
  const { config } = parseConfig(
    [
      "--port=0",
      `--models-dir=${join(ROOT, "models")}`,
      `--manifest=${join(tmp, "manifest.json")}`,
      `--threads=${values.threads}`,
      "--parallel=4",
      "--offline",
      "--preload=false",
      `--isolation=${values.same ? "process" : mode}`,
      ...((mode === "process" || values.same) && values["runner-nice"]
        ? [`--runner-nice=${values["runner-nice"]}`]
        : []),
    ],
    {},
    ROOT,
  );
  servers[mode] = await startServer(config!, {
    loaders: builtinLoaders(config!),
    log: createLogger("json", () => {}),
  });
  for (const id of Object.keys(MODELS)) {
    await servers[mode].registry.load(servers[mode].registry.resolve(id, "chat"));
  }
}

let requestNo = 0;
/** A ~120-token prompt no other request shares a prefix with. */
function prompt(): string {
  const n = ++requestNo;
  return `Request ${n}: ` + Array.from({ length: 90 }, (_, i) => WORDS[(i * 7 + n) % WORDS.length]).join(" ");
}

async function burst(mode: Mode, model: string, streams: number, tokens: number) {
  return await Promise.all(Array.from({ length: streams }, async (_, i) => {
    const t = await streamChat(servers[mode].url, {
      model,
      messages: [{ role: "user", content: prompt() }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: tokens,
      ignore_eos: true,
      temperature: 1,
      seed: 1000 + i,
    });
    if (t.tokens !== tokens) throw new Error(`${mode} ${model}: ${t.tokens} tokens, not ${tokens}`);
    return t;
  }));
}

const lines = [
  `Models: ${Object.keys(MODELS).join(", ")}; threads ${values.threads}, ${newTokens} new ` +
  `tokens (ignore_eos, temperature 1, seeded), distinct prompts, ${rounds} rounds, medians.` +
  (values.same ? " A/A run (--same): both columns are runner-process servers; the ratios are noise." : ""),
  "",
  "| model | streams | thread TTFT ms | process TTFT ms | TTFT ratio | thread decode tok/s | process decode tok/s | decode ratio |",
  "|---|---:|---:|---:|---:|---:|---:|---:|",
];
try {
  for (const model of Object.keys(MODELS)) {
    for (const streams of values.streams.split(",").map(Number)) {
      const res: Record<Mode, { ttft: number[]; tps: number[] }> = {
        process: { ttft: [], tps: [] },
        thread: { ttft: [], tps: [] },
      };
      await burst("process", model, streams, 16);
      await burst("thread", model, streams, 16);
      for (let r = 0; r < rounds; r++) {
        const order: Mode[] = r % 2 ? ["thread", "process"] : ["process", "thread"];
        for (const mode of order) {
          const run = await burst(mode, model, streams, newTokens);
          res[mode].ttft.push(median(run.map((t) => t.ttft)));
          res[mode].tps.push(median(run.map((t) => (t.chunks - 1) / (t.span / 1000))));
        }
      }
      const m = (mode: Mode) => ({ ttft: median(res[mode].ttft), tps: median(res[mode].tps) });
      const [t, p] = [m("thread"), m("process")];
      lines.push(
        `| ${model} | ${streams} | ${t.ttft.toFixed(1)} | ${p.ttft.toFixed(1)} | ${
          (p.ttft / t.ttft).toFixed(3)
        } | ` +
          `${t.tps.toFixed(1)} | ${p.tps.toFixed(1)} | ${(p.tps / t.tps).toFixed(3)} |`,
      );
      console.error(lines.at(-1));
    }
  }
  lines.push("", "Runner processes (--isolation=process), resident memory after the run:", "");
  for (const m of servers.process.registry.memory()) {
    lines.push(
      `- ${m.model}: ${((m.rssBytes ?? 0) / 2 ** 20).toFixed(0)} MiB (the model reports ${
        (m.bytes / 2 ** 20).toFixed(0)
      } MiB held)`,
    );
  }
  console.log(lines.join("\n"));
} finally {
  for (const s of Object.values(servers)) await s.shutdown();
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
}
