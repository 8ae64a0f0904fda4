// Owns starting the real server for a benchmark: a temporary manifest of the benchmark's models, the flags a
// benchmark always wants (any port, CPU, offline, load on first use, a deep queue) plus its own, the built-in
// loaders and a silent logger. `close` stops it and removes the manifest.
import { join } from "node:path";
import { parseConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { type RunningServer, startServer } from "../src/server.ts";
import { builtinLoaders } from "../src/loaders.ts";
import { LlamaContext, LlamaModel, openLlama } from "../src/engines/llama/ffi.ts";

export const ROOT = new URL("../", import.meta.url).pathname;

export async function startBenchServer(
  models: Record<string, unknown>,
  flags: string[],
): Promise<{ server: RunningServer; url: string; close(): Promise<void> }> {
  const tmp = await Deno.makeTempDir({ prefix: "bench-" });
  const manifest = join(tmp, "manifest.json");
  await Deno.writeTextFile(manifest, JSON.stringify({ models }));
  const { config } = parseConfig(
    [
      "--port=0",
      `--models-dir=${ROOT}`,
      `--manifest=${manifest}`,
      "--device=cpu",
      "--offline",
      "--preload=false",
      "--queue-size=64",
      ...flags,
    ],
    {},
    ROOT,
  );
  const server = await startServer(config!, {
    loaders: builtinLoaders(config!),
    log: createLogger("json", () => {}),
  });
  return {
    server,
    url: server.url,
    close: async () => {
      await server.shutdown();
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * A streamed chat request of exactly `maxTokens` tokens (ignore_eos), greedy as libllama's loop picks its
 * tokens (argmax in C): the comparisons are of decoding, not sampling.
 */
export function greedyStream(model: string, messages: unknown[], maxTokens: number) {
  return {
    model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: maxTokens,
    ignore_eos: true,
    temperature: 0,
  };
}

let symbols: ReturnType<typeof openLlama> | undefined;

/**
 * libllama's own decode loop on a GGUF file (one context, one sequence), warmed up, in this process: the file
 * mapped and nothing advised to huge pages, as llama.cpp's own tools run it (the server does both otherwise,
 * see src/engines/llama/huge_pages.ts).
 */
export function libllamaLoop(path: string, threads: number): LlamaContext {
  symbols ??= openLlama();
  const model = new LlamaModel(symbols, path, { gpuLayers: 0, cpuOnly: true, mmap: true });
  const ctx = new LlamaContext(model, {
    nCtx: 2048,
    nBatch: 512,
    nSeqMax: 1,
    threads,
    embeddings: false,
    pooling: -1,
    cpuOnly: true,
  });
  ctx.benchDecode(32, 8);
  return ctx;
}
