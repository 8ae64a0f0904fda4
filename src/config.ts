// Owns the server's configuration: one table of options, each a command-line flag with an environment
// variable twin and help text; parsed and validated once at start. A bad value stops the start with one line
// naming the flag.
import { parseArgs } from "node:util";
import { isAbsolute, resolve } from "node:path";
import type { DevicePref } from "./engines/types.ts";

export interface Config {
  host: string;
  port: number;
  modelsDir: string;
  manifest: string;
  device: DevicePref;
  threads: number;
  apiKeys: string[];
  corsOrigins: string[];
  jsonBodyBytes: number;
  audioBodyBytes: number;
  queueSize: number;
  loadWaitMs: number;
  requestTimeoutMs: number;
  shutdownTimeoutMs: number;
  bodyTimeoutMs: number;
  logFormat: "json" | "text";
  logLevel: "debug" | "info";
  offline: boolean;
  strict: boolean;
  preload: boolean;
  isolation: "process" | "thread";
  runnerNice: number;
  streamIntervalMs: number;
  whisperLib: string;
  llamaLib: string;
  parallel: number;
  vadModel: string;
  vad: boolean;
  transcriptionConcurrency: number;
  embedBatchWindowMs: number;
  embedBatchTokens: number;
  idleUnloadSeconds: number;
  memoryBudgetBytes: number;
  gpuMemoryBudgetBytes: number;
  gpuLayers: number;
  llamaVariant: "auto" | "cpu" | "vulkan" | "cuda" | "metal";
  whisperVariant: "auto" | "cpu" | "vulkan" | "cuda" | "metal";
  dataDir: string;
  storeUrl: string;
  storeTtlSeconds: number;
  storeMaxBytes: number;
}

type Kind = "string" | "int" | "bool" | "list" | "bytes" | "enum";

interface Option {
  key: keyof Config;
  flag: string;
  env: string;
  kind: Kind;
  default: string;
  help: string;
  choices?: string[];
  min?: number;
  max?: number;
}

const CPU_COUNT = (() => {
  try {
    return navigator.hardwareConcurrency || 2;
  } catch {
    return 2;
  }
})();

/** Every option, in --help order. Defaults are strings so they parse exactly like user input. */
export const OPTIONS: Option[] = [
  {
    key: "host",
    flag: "host",
    env: "OAI_HOST",
    kind: "string",
    default: "127.0.0.1",
    help: "Address to listen on.",
  },
  {
    key: "port",
    flag: "port",
    env: "OAI_PORT",
    kind: "int",
    default: "8080",
    min: 0,
    max: 65535,
    help: "Port (0 = any free).",
  },
  {
    key: "modelsDir",
    flag: "models-dir",
    env: "OAI_MODELS_DIR",
    kind: "string",
    default: "models",
    help: "Folder holding model files and downloads.",
  },
  {
    key: "manifest",
    flag: "manifest",
    env: "OAI_MANIFEST",
    kind: "string",
    default: "",
    help: "Model manifest JSON (default: <models-dir>/manifest.json).",
  },
  {
    key: "device",
    flag: "device",
    env: "OAI_DEVICE",
    kind: "enum",
    choices: ["auto", "webgpu", "cpu"],
    default: "auto",
    help: "Where models run: auto (WebGPU when an adapter is found, else CPU), webgpu or cpu.",
  },
  {
    key: "threads",
    flag: "threads",
    env: "OAI_THREADS",
    kind: "int",
    default: String(CPU_COUNT),
    min: 1,
    help: "CPU threads per model.",
  },
  {
    key: "apiKeys",
    flag: "api-key",
    env: "OAI_API_KEYS",
    kind: "list",
    default: "",
    help: "Accepted API keys (repeat the flag or comma-separate; @file reads one per line). None = open.",
  },
  {
    key: "corsOrigins",
    flag: "cors-origin",
    env: "OAI_CORS_ORIGINS",
    kind: "list",
    default: "",
    help: "Origins allowed by CORS (repeat or comma-separate; * for any). None = no CORS headers.",
  },
  {
    key: "jsonBodyBytes",
    flag: "max-json-body",
    env: "OAI_MAX_JSON_BODY",
    kind: "bytes",
    default: "4MB",
    help: "Largest JSON request body (e.g. 4MB).",
  },
  {
    key: "audioBodyBytes",
    flag: "max-audio-body",
    env: "OAI_MAX_AUDIO_BODY",
    kind: "bytes",
    default: "25MB",
    help: "Largest audio upload (OpenAI's limit is 25 MB).",
  },
  {
    key: "queueSize",
    flag: "queue-size",
    env: "OAI_QUEUE_SIZE",
    kind: "int",
    default: "64",
    min: 0,
    help: "Requests waiting per model beyond those running; more get 429.",
  },
  {
    key: "loadWaitMs",
    flag: "load-wait-ms",
    env: "OAI_LOAD_WAIT_MS",
    kind: "int",
    default: "60000",
    min: 0,
    help: "How long a request waits for its model to finish loading before 503.",
  },
  {
    key: "idleUnloadSeconds",
    flag: "idle-unload-s",
    env: "OAI_IDLE_UNLOAD_S",
    kind: "int",
    default: "0",
    min: 0,
    help: "Unload a model nobody used for this many seconds (0 = keep loaded).",
  },
  {
    key: "memoryBudgetBytes",
    flag: "memory-budget",
    env: "OAI_MEMORY_BUDGET",
    kind: "bytes",
    default: "0",
    help:
      "Keep what loaded models hold (weights, caches, states) under this size (e.g. 8GB) by unloading the " +
      "least recently used (0 = no limit). Counts host memory; GPU memory has --gpu-memory-budget.",
  },
  {
    key: "gpuMemoryBudgetBytes",
    flag: "gpu-memory-budget",
    env: "OAI_GPU_MEMORY_BUDGET",
    kind: "bytes",
    default: "0",
    help:
      "Keep what loaded models hold in GPU memory (weights, KV caches, compute buffers) under this size by " +
      "unloading the least recently used (0 = no limit).",
  },
  {
    key: "gpuLayers",
    flag: "gpu-layers",
    env: "OAI_GPU_LAYERS",
    kind: "int",
    default: "-1",
    min: -1,
    help:
      "Layers of each GGUF model llama.cpp puts on the GPU (-1 = all that fit in the GPU's free memory, 0 = " +
      "none); a manifest entry's options.gpu_layers overrides it, and device: cpu keeps a model off the GPU.",
  },
  {
    key: "whisperVariant",
    flag: "whisper-variant",
    env: "OAI_WHISPER_VARIANT",
    kind: "enum",
    choices: ["auto", "cpu", "vulkan", "cuda", "metal"],
    default: "auto",
    help: "Which build of whisper.cpp to load: auto (the GPU API chosen for llama.cpp on this host, when " +
      "whisper.cpp was built for it with `native/build.ts --gpu`, else the CPU build), or one by name; " +
      "--whisper-lib names a folder instead.",
  },
  {
    key: "llamaVariant",
    flag: "llama-variant",
    env: "OAI_LLAMA_VARIANT",
    kind: "enum",
    choices: ["auto", "cpu", "vulkan", "cuda", "metal"],
    default: "auto",
    help:
      "Which installed build of llama.cpp to load: auto (the one `deno task native:llama` chose for this " +
      "host: CUDA, Metal, Vulkan or CPU), or one by name; --llama-lib names a folder instead.",
  },
  {
    key: "dataDir",
    flag: "data-dir",
    env: "OAI_DATA_DIR",
    kind: "string",
    default: "data",
    help: "Folder for the server's own state (the Responses store's SQLite file).",
  },
  {
    key: "storeUrl",
    flag: "store-url",
    env: "OAI_STORE_URL",
    kind: "string",
    default: "",
    help:
      "Where stored responses live: empty = SQLite in <data-dir>/responses.sqlite, sqlite:<file>, postgres://... " +
      "(shared by replicas), or none (store nothing).",
  },
  {
    key: "storeTtlSeconds",
    flag: "store-ttl",
    env: "OAI_STORE_TTL",
    kind: "int",
    default: "2592000",
    min: 1,
    help: "Seconds a stored response is kept (default 30 days).",
  },
  {
    key: "storeMaxBytes",
    flag: "store-max-bytes",
    env: "OAI_STORE_MAX_BYTES",
    kind: "bytes",
    default: "1GB",
    help: "Largest total size of stored responses; the oldest go first beyond it.",
  },
  {
    key: "requestTimeoutMs",
    flag: "request-timeout-ms",
    env: "OAI_REQUEST_TIMEOUT_MS",
    kind: "int",
    default: "600000",
    min: 0,
    help: "Wall-clock limit of one request (0 = none).",
  },
  {
    key: "bodyTimeoutMs",
    flag: "body-timeout-ms",
    env: "OAI_BODY_TIMEOUT_MS",
    kind: "int",
    default: "30000",
    min: 1,
    help: "Time allowed to receive a request body (slow clients get 408).",
  },
  {
    key: "shutdownTimeoutMs",
    flag: "shutdown-timeout-ms",
    env: "OAI_SHUTDOWN_TIMEOUT_MS",
    kind: "int",
    default: "30000",
    min: 0,
    help: "On SIGINT/SIGTERM, how long in-flight requests may finish.",
  },
  {
    key: "logFormat",
    flag: "log-format",
    env: "OAI_LOG_FORMAT",
    kind: "enum",
    choices: ["text", "json"],
    default: "text",
    help: "Log lines as text or JSON.",
  },
  {
    key: "logLevel",
    flag: "log-level",
    env: "OAI_LOG_LEVEL",
    kind: "enum",
    choices: ["info", "debug"],
    default: "info",
    help: "debug adds a line per embedding batch and other detail.",
  },
  {
    key: "offline",
    flag: "offline",
    env: "OAI_OFFLINE",
    kind: "bool",
    default: "false",
    help: "Never download models; use only files in the models folder.",
  },
  {
    key: "strict",
    flag: "strict",
    env: "OAI_STRICT",
    kind: "bool",
    default: "false",
    help: "Refuse (400) request fields this server accepts but does not act on, instead of listing them in " +
      "X-Ignored-Params; a request's own X-Strict header overrides it.",
  },
  {
    key: "preload",
    flag: "preload",
    env: "OAI_PRELOAD",
    kind: "bool",
    default: "true",
    help: "Load every manifest model at start (else on first use).",
  },
  {
    key: "isolation",
    flag: "isolation",
    env: "OAI_ISOLATION",
    kind: "enum",
    choices: ["process", "thread"],
    default: "process",
    help: "Where each model computes: a runner process of its own (a crash in a native library ends that " +
      "model's runner, which restarts, never the server) or a worker thread of the server's process.",
  },
  {
    key: "runnerNice",
    flag: "runner-nice",
    env: "OAI_RUNNER_NICE",
    kind: "int",
    default: "5",
    min: 0,
    max: 19,
    help: "How much lower than the server's the CPU priority of runner processes is (a nice increment; 0: " +
      "the same): the server's own thread (health checks, tokens on their way out, new requests) gets a " +
      "core at once while model threads use them all. Refused with --isolation=thread (unless 0).",
  },
  {
    key: "streamIntervalMs",
    flag: "stream-interval-ms",
    env: "OAI_STREAM_INTERVAL_MS",
    kind: "int",
    default: "30",
    min: 0,
    max: 1000,
    help:
      "A streamed token that comes sooner than this after the last tokens left a model's runner waits to " +
      "go with the next ones (a choice's first token and its end never wait): each hand-over wakes the " +
      "server's thread on the cores the model decodes on. 0: every round's tokens at once.",
  },
  {
    key: "parallel",
    flag: "parallel",
    env: "OAI_PARALLEL",
    kind: "int",
    default: "4",
    min: 1,
    help:
      "Sequences a chat model generates together (llama.cpp: slots with a KV stream of the full context " +
      "each, batched into shared llama_decode calls; ONNX: interleaved token by token), also how many " +
      "finished ones stay as its prompt cache; further requests wait in the model's queue.",
  },
  {
    key: "llamaLib",
    flag: "llama-lib",
    env: "OAI_LLAMA_LIB",
    kind: "string",
    default: "",
    help: "Folder (or file) of libllama_shim (default: native/build/llama/lib, set up by " +
      "`deno task native:llama`).",
  },
  {
    key: "whisperLib",
    flag: "whisper-lib",
    env: "OAI_WHISPER_LIB",
    kind: "string",
    default: "",
    help: "Folder (or file) of the whisper.cpp shared library (default: native/build/lib, built by " +
      "`deno task native:build`, or lib/ beside a compiled binary).",
  },
  {
    key: "vadModel",
    flag: "vad-model",
    env: "OAI_VAD_MODEL",
    kind: "string",
    default: "",
    help: "Silero VAD model in ggml format, for voice activity detection.",
  },
  {
    key: "vad",
    flag: "vad",
    env: "OAI_VAD",
    kind: "bool",
    default: "false",
    help: "Skip silence with VAD by default (needs --vad-model; requests may override).",
  },
  {
    key: "transcriptionConcurrency",
    flag: "transcription-concurrency",
    env: "OAI_TRANSCRIPTION_CONCURRENCY",
    kind: "int",
    default: "1",
    min: 1,
    help: "Transcriptions run at once per model (one whisper state each).",
  },
  {
    key: "embedBatchWindowMs",
    flag: "embed-batch-window-ms",
    env: "OAI_EMBED_BATCH_WINDOW_MS",
    kind: "int",
    default: "2",
    min: 0,
    help: "How long concurrent embedding requests are gathered into one batch.",
  },
  {
    key: "embedBatchTokens",
    flag: "embed-batch-tokens",
    env: "OAI_EMBED_BATCH_TOKENS",
    kind: "int",
    default: "16384",
    min: 1,
    help: "Token budget of one embedding batch (padded tokens).",
  },
];

/** A configuration error: the message names the flag and is printed as one line. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export function parseBytes(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$/i.exec(text);
  if (!m) return undefined;
  const unit = (m[2] ?? "b").toLowerCase();
  const mult: Record<string, number> = {
    b: 1,
    kb: 1e3,
    kib: 1024,
    mb: 1e6,
    mib: 1024 ** 2,
    gb: 1e9,
    gib: 1024 ** 3,
  };
  return Math.floor(Number(m[1]) * mult[unit]);
}

function convert(opt: Option, raw: string, readFile: (p: string) => string): unknown {
  const bad = (why: string) => new ConfigError(`--${opt.flag}: ${why} (got "${raw}")`);
  switch (opt.kind) {
    case "string":
      return raw;
    case "int": {
      if (!/^-?\d+$/.test(raw.trim())) throw bad("expected an integer");
      const n = Number(raw);
      if (opt.min !== undefined && n < opt.min) throw bad(`must be at least ${opt.min}`);
      if (opt.max !== undefined && n > opt.max) throw bad(`must be at most ${opt.max}`);
      return n;
    }
    case "bool": {
      const v = raw.trim().toLowerCase();
      if (["1", "true", "yes", "on"].includes(v)) return true;
      if (["0", "false", "no", "off"].includes(v)) return false;
      throw bad("expected true or false");
    }
    case "bytes": {
      const n = parseBytes(raw);
      if (n === undefined || (n <= 0 && opt.default !== "0")) throw bad("expected a size such as 25MB");
      return n;
    }
    case "enum":
      if (!opt.choices!.includes(raw)) throw bad(`expected one of ${opt.choices!.join(", ")}`);
      return raw;
    case "list": {
      const items: string[] = [];
      for (const part of raw.split(",").map((s) => s.trim()).filter(Boolean)) {
        if (part.startsWith("@")) {
          let text: string;
          try {
            text = readFile(part.slice(1));
          } catch (e) {
            throw bad(`cannot read ${part.slice(1)}: ${(e as Error).message}`);
          }
          items.push(...text.split(/\r?\n/).map((s) => s.trim()).filter((s) => s && !s.startsWith("#")));
        } else items.push(part);
      }
      return items;
    }
  }
}

export interface ParseResult {
  config?: Config;
  help?: string;
  /** Positional arguments (sub-commands). */
  positionals: string[];
}

/**
 * Parses flags, then environment variables, then defaults (first found wins; list flags may repeat).
 * `cwd` anchors relative paths so the config is independent of where it is used later.
 */
export function parseConfig(
  args: string[],
  env: Record<string, string | undefined> = Deno.env.toObject(),
  cwd = Deno.cwd(),
  readFile: (p: string) => string = (p) => Deno.readTextFileSync(p),
): ParseResult {
  const options: Record<string, { type: "string" | "boolean"; multiple?: boolean; short?: string }> = {
    help: { type: "boolean", short: "h" },
  };
  for (const o of OPTIONS) options[o.flag] = { type: "string", multiple: o.kind === "list" };
  // Boolean flags may stand alone (`--offline`), carry a value (`--offline=false`) or be negated (`--no-vad`).
  const bools = new Set(OPTIONS.filter((o) => o.kind === "bool").map((o) => o.flag));
  const normalized = args.map((a) => {
    const m = /^--(no-)?([\w-]+)$/.exec(a);
    if (m && bools.has(m[2])) return `--${m[2]}=${m[1] ? "false" : "true"}`;
    return a;
  });
  let parsed;
  try {
    parsed = parseArgs({ args: normalized, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new ConfigError((e as Error).message.split("\n")[0]);
  }
  if (parsed.values.help) return { help: helpText(), positionals: parsed.positionals };
  const out: Record<string, unknown> = {};
  for (const o of OPTIONS) {
    const fromFlag = parsed.values[o.flag] as string | string[] | undefined;
    const raw = Array.isArray(fromFlag) ? (fromFlag.length ? fromFlag.join(",") : undefined) : fromFlag;
    out[o.key] = convert(o, raw ?? env[o.env] ?? o.default, readFile);
  }
  const c = out as unknown as Config;
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(cwd, p));
  c.modelsDir = abs(c.modelsDir);
  c.dataDir = abs(c.dataDir);
  c.manifest = c.manifest ? abs(c.manifest) : resolve(c.modelsDir, "manifest.json");
  if (c.whisperLib) c.whisperLib = abs(c.whisperLib);
  if (c.llamaLib) c.llamaLib = abs(c.llamaLib);
  if (c.vadModel) c.vadModel = abs(c.vadModel);
  // A worker thread shares the server's priority (it is the server's process): asked for, a lower one could
  // not be honoured.
  const niceAsked = parsed.values["runner-nice"] ?? env.OAI_RUNNER_NICE;
  if (c.isolation === "thread" && niceAsked !== undefined && c.runnerNice !== 0) {
    throw new ConfigError(
      "--runner-nice: applies to runner processes; with --isolation=thread models compute in the server's " +
        "own process, at its priority",
    );
  }
  if (c.vad && !c.vadModel) {
    throw new ConfigError("--vad: needs --vad-model (a Silero VAD model in ggml format)");
  }
  return { config: c, positionals: parsed.positionals };
}

export function helpText(): string {
  const lines = [
    "Usage: deno task start [flags]",
    "",
    "An OpenAI-compatible server for chat, embeddings and speech to text.",
    "",
    "Flags (each also read from its environment variable):",
  ];
  for (const o of OPTIONS) {
    const arg = o.kind === "bool"
      ? "[=true|false]"
      : o.kind === "enum"
      ? `=${o.choices!.join("|")}`
      : "=VALUE";
    lines.push(`  --${o.flag}${arg}  (${o.env})`);
    lines.push(`      ${o.help}${o.default ? ` Default: ${o.default}.` : ""}`);
  }
  return lines.join("\n");
}
