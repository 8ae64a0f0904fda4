// Owns end-to-end test plumbing: starting the real server on port 0 with a manifest of the generated models
// (or any manifest a test gives), an official `openai` client pointed at it, captured log lines, and cleanup.
import OpenAI from "openai";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { type Config, parseConfig } from "../src/config.ts";
import { memoryLogger } from "../src/log.ts";
import { type RunningServer, startServer } from "../src/server.ts";
import { builtinLoaders } from "../src/loaders.ts";
import type { ManifestJson } from "../src/engines/manifest.ts";
import type { Loaders } from "../src/engines/registry.ts";
import type { RequestRecord } from "../src/app.ts";

export const REPO_ROOT = fileURLToPath(new URL("../", import.meta.url));
export const MODELS_DIR = join(REPO_ROOT, "models");
export const SHARED_DIR = join(REPO_ROOT, "..", "shared");

/** Manifest entries for the generated models (paths relative to models/). */
export const GENERATED_MODELS: ManifestJson = {
  defaults: { chat: "chat-tiny", embedding: "embed-tiny", transcription: "whisper-tiny-test" },
  aliases: {
    "gpt-4o-mini": "@chat",
    "text-embedding-3-small": "@embedding",
    "text-embedding-ada-002": "@embedding",
    "whisper-1": "@transcription",
  },
  models: {
    "chat-tiny": { task: "chat", path: "generated/chat-tiny", dtype: "fp32", device: "cpu" },
    "embed-tiny": { task: "embedding", path: "generated/embed-tiny", dtype: "fp32", device: "cpu" },
    "whisper-tiny-test": {
      task: "transcription",
      path: "generated/whisper-tiny-test",
      options: { file: "ggml-model.bin" },
    },
    "whisper-multi-test": {
      task: "transcription",
      path: "generated/whisper-multi-test",
      options: { file: "ggml-model.bin" },
    },
  },
};

export interface TestServer {
  server: RunningServer;
  url: string;
  client: OpenAI;
  logs: string[];
  records: RequestRecord[];
  config: Config;
  close(): Promise<void>;
}

export interface TestServerOptions {
  manifest?: ManifestJson;
  /** Extra command-line flags, parsed exactly as the CLI would. */
  flags?: string[];
  loaders?: Loaders;
  apiKey?: string;
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const dir = await Deno.makeTempDir({ prefix: "oai-test-" });
  const manifestPath = join(dir, "manifest.json");
  await Deno.writeTextFile(manifestPath, JSON.stringify(opts.manifest ?? GENERATED_MODELS));
  const { config } = parseConfig(
    [
      "--port=0",
      "--host=127.0.0.1",
      `--models-dir=${MODELS_DIR}`,
      `--manifest=${manifestPath}`,
      "--offline",
      "--preload=false",
      "--log-format=json",
      `--data-dir=${join(dir, "data")}`,
      ...(opts.flags ?? []),
    ],
    {},
    REPO_ROOT,
  );
  const log = memoryLogger();
  const records: RequestRecord[] = [];
  const server = await startServer(config!, {
    loaders: opts.loaders ?? builtinLoaders(config!),
    log,
    onRequestDone: (r) => records.push(r),
  });
  const client = new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: opts.apiKey ?? "sk-test",
    maxRetries: 0,
    timeout: 120_000,
  });
  return {
    server,
    url: server.url,
    client,
    logs: log.lines,
    records,
    config: config!,
    close: async () => {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** POSTs JSON (or raw text) with fetch and returns status, headers and parsed body. */
export async function postRaw(
  url: string,
  body: string | Uint8Array<ArrayBuffer>,
  headers: Record<string, string> = { "content-type": "application/json" },
): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const res = await fetch(url, { method: "POST", body, headers });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch {
    json = { raw: text };
  }
  return { status: res.status, headers: res.headers, json };
}

/** Asserts the OpenAI error envelope: all four keys, with the expected values where given. */
export function errorOf(json: Record<string, unknown>): {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
} {
  const err = json.error as Record<string, unknown> | undefined;
  if (!err || typeof err !== "object") throw new Error(`not an error envelope: ${JSON.stringify(json)}`);
  for (const k of ["message", "type", "param", "code"]) {
    if (!(k in err)) throw new Error(`error envelope lacks "${k}": ${JSON.stringify(json)}`);
  }
  return err as never;
}

export interface SpawnedServer {
  url: string;
  child: Deno.ChildProcess;
  /** Every log line so far. */
  log(): string;
  /** Resident memory of the server process, in bytes (Linux /proc). */
  rss(): Promise<number>;
  /** SIGTERM, then the exit status. */
  stop(): Promise<Deno.CommandStatus>;
}

/**
 * Starts `main.ts` as its own process on port 0 with the generated models' manifest (or `manifest`), and waits
 * for its "listening" line. `denoFlags` go before the script (permissions); `flags` after it.
 */
export async function spawnServer(
  opts: { flags?: string[]; denoFlags?: string[]; manifest?: ManifestJson; env?: Record<string, string> } =
    {},
): Promise<SpawnedServer> {
  const dir = await Deno.makeTempDir({ prefix: "oai-spawn-" });
  const manifest = join(dir, "manifest.json");
  await Deno.writeTextFile(manifest, JSON.stringify(opts.manifest ?? GENERATED_MODELS));
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(opts.denoFlags ?? ["-A"]),
      join(REPO_ROOT, "main.ts"),
      "--port=0",
      `--models-dir=${MODELS_DIR}`,
      `--manifest=${manifest}`,
      "--offline",
      "--no-preload",
      "--log-format=json",
      ...(opts.flags ?? []),
    ],
    cwd: REPO_ROOT,
    env: opts.env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let url = "";
  while (!url) {
    const { value, done } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`server exited before listening:\n${buffered}`);
    }
    buffered += value;
    url = /"url":"(http:\/\/[^"]+)"/.exec(buffered)?.[1] ?? "";
  }
  // Keep draining the log so the child never blocks on a full pipe.
  const drained = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += value;
    }
  })();
  return {
    url,
    child,
    log: () => buffered,
    rss: async () => {
      const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    stop: async () => {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      const status = await child.status;
      await drained;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      return status;
    },
  };
}

/** POSTs a chat request for chat-tiny (unless `body` names a model) and asserts a 400 naming `param`. */
export async function expectChatBadRequest(
  url: string,
  body: Record<string, unknown>,
  param: string,
  message?: RegExp,
): Promise<void> {
  const res = await postRaw(`${url}/v1/chat/completions`, JSON.stringify({ model: "chat-tiny", ...body }));
  const what = JSON.stringify(body).slice(0, 200);
  if (res.status !== 400) throw new Error(`${what} -> ${res.status} ${JSON.stringify(res.json)}`);
  const err = errorOf(res.json);
  if (err.type !== "invalid_request_error") throw new Error(`${what}: type ${err.type}`);
  if (err.param !== param) throw new Error(`${what}: param ${err.param}, expected ${param} (${err.message})`);
  if (message && !message.test(err.message)) throw new Error(`${what}: message ${err.message}`);
}

/** Runs `fn` against a server whose manifest is the generated models plus `models`, closed afterwards. */
export async function withExtraModels(
  models: ManifestJson["models"],
  fn: (s: TestServer) => Promise<void>,
): Promise<void> {
  const s = await startTestServer({
    manifest: { ...GENERATED_MODELS, models: { ...GENERATED_MODELS.models, ...models } },
  });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}
