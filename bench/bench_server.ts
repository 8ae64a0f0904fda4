// Owns starting the real server for a benchmark: a temporary manifest of the benchmark's models, the flags a
// benchmark always wants (any port, CPU, offline, load on first use, a deep queue) plus its own, the built-in
// loaders and a silent logger. `close` stops it and removes the manifest.
import { join } from "node:path";
import { parseConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { type RunningServer, startServer } from "../src/server.ts";
import { builtinLoaders } from "../src/loaders.ts";

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
