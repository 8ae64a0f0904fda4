// Composition root: parses the config, wires the engines' loaders into the server, starts it, and turns
// SIGINT/SIGTERM into a graceful shutdown that exits 0.
import { ConfigError, parseConfig } from "./src/config.ts";
import { createLogger } from "./src/log.ts";
import { startServer } from "./src/server.ts";
import { ManifestError } from "./src/engines/manifest.ts";
import { builtinLoaders } from "./src/loaders.ts";
import { runCli } from "./src/cli/main.ts";
import { RUNNER_ARG } from "./src/workers/runner_command.ts";

async function main(): Promise<number> {
  // A single binary is also its own model runner (src/workers/runner_command.ts starts it so).
  if (Deno.args[0] === RUNNER_ARG) return await (await import("./src/workers/runner.ts")).runRunner();
  // Sub-commands (`pull`, `list`) run instead of the server.
  const sub = await runCli(Deno.args);
  if (sub !== undefined) return sub;
  let parsed;
  try {
    parsed = parseConfig(Deno.args);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`error: ${e.message}`);
      return 2;
    }
    throw e;
  }
  if (parsed.help) {
    console.log(parsed.help);
    return 0;
  }
  const config = parsed.config!;
  const log = createLogger(config.logFormat, undefined, config.logLevel);
  // Signals are taken before the server starts, so a stop during start-up (or a model load) is graceful too.
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let stopRequested = false;
  const stop = () => {
    stopRequested = true;
    void server?.shutdown();
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  try {
    server = await startServer(config, { loaders: builtinLoaders(config), log });
  } catch (e) {
    if (
      e instanceof ManifestError || e instanceof Deno.errors.AddrInUse ||
      e instanceof Deno.errors.PermissionDenied
    ) {
      console.error(`error: ${(e as Error).message}`);
      return 2;
    }
    throw e;
  }
  if (stopRequested) void server.shutdown();
  await server.finished;
  await server.shutdown();
  return 0;
}

// Deno.exit: a model load still running in the background must not hold the process after shutdown.
if (import.meta.main) Deno.exit(await main());
