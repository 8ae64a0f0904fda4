// Owns which code loads which model: a loader per backend descriptor (src/engines/backends.ts) and task it
// serves, each starting the model's runner process (src/workers/; a worker thread with --isolation=thread)
// with the parts of the configuration the runner needs.
import type { Config } from "./config.ts";
import type { Loaders } from "./engines/registry.ts";
import { BACKENDS } from "./engines/backends.ts";
import { whisperLibFor } from "./engines/whisper/ffi.ts";
import { workerLoaders } from "./workers/host.ts";

export function builtinLoaders(config: Config): Loaders {
  const loaders = workerLoaders({
    debug: config.logLevel === "debug",
    isolation: config.isolation,
    nice: config.runnerNice,
    streamIntervalMs: config.streamIntervalMs,
    whisper: {
      lib: config.whisperLib || whisperLibFor(config.whisperVariant),
      concurrency: config.transcriptionConcurrency,
      vadModel: config.vadModel || undefined,
    },
  });
  return Object.fromEntries(
    BACKENDS.map((b) => [b.kind, Object.fromEntries(b.tasks.map((task) => [task, loaders[task]]))]),
  );
}
