// Owns the command line of a model's runner process and its permissions: each runner gets only what its
// engine needs, never more than the server had. Read: the models folder and this checkout (its modules,
// node_modules, native/); FFI: the engine's own libraries only (llama.cpp's for a GGUF model; onnxruntime's
// and sharp's for transformers.js); write and net: the models folder and the hub's hosts, and only when
// downloads are on. A single binary (`deno compile`) runs itself as the runner (its permissions are baked in).
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadRequest } from "./protocol.ts";

export interface RunnerCommand {
  command: string;
  args: string[];
}

/** The argument a single binary is started with to be a runner (main.ts checks for it). */
export const RUNNER_ARG = "__runner";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const RUNNER_URL = new URL("./runner.ts", import.meta.url).href;
/** The hosts model files are downloaded from (the hub and its file stores), as `deno task serve` allows. */
const HUB_HOSTS = [
  "huggingface.co",
  "hf.co",
  "cdn-lfs.hf.co",
  "cdn-lfs-us-1.hf.co",
  "cdn-lfs.huggingface.co",
  "cas-bridge.xethub.hf.co",
];

/** The Deno to run: this one when it may be run, else `deno` from PATH (what `--allow-run=deno` allows). */
function denoCommand(): string {
  const self = Deno.execPath();
  try {
    if (Deno.permissions.querySync({ name: "run", command: self }).state === "granted") return self;
  } catch {
    // no permission API for it: fall through
  }
  return "deno";
}

/** npm packages with native code that transformers.js loads (onnxruntime-node, sharp). */
function nativeNpmDirs(): string[] {
  const dir = join(REPO, "node_modules", ".deno");
  try {
    return [...Deno.readDirSync(dir)]
      .filter((e) => /^(onnxruntime-node|@img\+sharp-linux)/.test(e.name))
      .map((e) => join(dir, e.name));
  } catch {
    return [];
  }
}

/** The libraries a runner for `req` loads through FFI. */
function ffiPaths(req: LoadRequest): string[] {
  if (req.entry.engine === "whisper.cpp") {
    const lib = req.whisper?.lib;
    return [join(REPO, "native", "build"), ...(lib ? [lib, dirname(lib)] : [])];
  }
  if (req.entry.engine === "llama.cpp") {
    const dirs = [join(REPO, "native", "build")];
    if (req.llamaLib) dirs.push(req.llamaLib, dirname(req.llamaLib));
    return dirs;
  }
  return [join(REPO, "native", "build", "ort"), ...nativeNpmDirs()];
}

function hubHosts(req: LoadRequest): string[] {
  const hosts = [...HUB_HOSTS];
  const endpoint = req.hub?.endpoint ?? Deno.env.get("HF_ENDPOINT");
  if (endpoint) {
    try {
      hosts.push(new URL(endpoint).host);
    } catch {
      // not a URL: the load says so
    }
  }
  return hosts;
}

/** Files outside the checkout and models folder a runner reads: a whisper runner's VAD model. */
function readExtra(req: LoadRequest): string[] {
  return req.whisper?.vadModel ? [resolve(req.whisper.vadModel)] : [];
}

export function runnerCommand(req: LoadRequest): RunnerCommand {
  if (Deno.build.standalone) return { command: Deno.execPath(), args: [RUNNER_ARG] };
  const args = [
    "run",
    "--no-prompt",
    `--config=${join(REPO, "deno.json")}`,
    `--allow-read=${[REPO, resolve(req.modelsDir), ...readExtra(req)].join(",")}`,
    `--allow-ffi=${ffiPaths(req).join(",")}`,
    "--allow-env",
    // sharp (imported by transformers.js) asks for the network interfaces and host name to find its libc.
    "--allow-sys=cpus,networkInterfaces,hostname",
  ];
  if (req.allowRemote) {
    args.push(`--allow-net=${hubHosts(req).join(",")}`, `--allow-write=${resolve(req.modelsDir)}`);
  }
  args.push(RUNNER_URL);
  return { command: denoCommand(), args };
}
