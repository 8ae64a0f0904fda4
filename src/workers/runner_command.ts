// Owns the command line of a model's runner process and its permissions: each runner gets only what its
// engine needs (its descriptor's runnerNeeds). Read: the models folder and this checkout (its modules,
// node_modules, native/), plus what the backend names; FFI: the backend's own libraries only (llama.cpp's
// for a GGUF model; onnxruntime's and sharp's for transformers.js; whisper.cpp's); write and net: the models
// folder and the hub's hosts, and only when downloads are on. A single binary (`deno compile`) runs itself as the runner (its permissions are baked in).
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type LoadRequest, NICE_ARG } from "./protocol.ts";
import { backendOf } from "../engines/backends.ts";

export interface RunnerCommand {
  command: string;
  args: string[];
  /** Set in the runner's environment, over what it inherits from the server's. */
  env: Record<string, string>;
}

/**
 * The runner's environment over the server's: OpenMP's worker threads (llama.cpp's CPU builds compute with
 * OpenMP) sleep as soon as a graph ends instead of spinning for the next (`OMP_WAIT_POLICY=passive`), unless
 * the server was started with a policy of its own. Between two tokens the runner's thread samples and hands
 * the token on, and the server's thread streams it: a spinning worker held the second of 2 cores meanwhile
 * (one stream on the SmolLM2-shaped Q4_0 file, 2 threads, side by side with llama-server, two pairs: 159.5
 * and 159.6 tok/s passive, 154.5 and 154.3 spinning; 8 and 16 streams the same within noise).
 */
export function runnerEnv(inherited: (name: string) => string | undefined): Record<string, string> {
  return inherited("OMP_WAIT_POLICY") === undefined ? { OMP_WAIT_POLICY: "passive" } : {};
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

/** The runner's own arguments (after its module, or after RUNNER_ARG in a single binary). */
function runnerArgs(req: LoadRequest): string[] {
  return req.nice ? [`${NICE_ARG}${req.nice}`] : [];
}

export function runnerCommand(req: LoadRequest): RunnerCommand {
  const env = runnerEnv((name) => Deno.env.get(name));
  if (Deno.build.standalone) {
    return { command: Deno.execPath(), args: [RUNNER_ARG, ...runnerArgs(req)], env };
  }
  const needs = backendOf(req.entry.engine).runnerNeeds({
    llamaLib: req.llamaLib,
    whisperLib: req.whisper?.lib,
    vadModel: req.whisper?.vadModel,
  });
  const args = [
    "run",
    "--no-prompt",
    `--config=${join(REPO, "deno.json")}`,
    `--allow-read=${[REPO, resolve(req.modelsDir), ...(needs.read ?? []).map((p) => resolve(p))].join(",")}`,
    `--allow-ffi=${needs.ffi.join(",")}`,
    "--allow-env",
    // sharp (imported by transformers.js) asks for the network interfaces and host name to find its libc;
    // setPriority lowers the runner's own priority (--runner-nice).
    `--allow-sys=cpus,networkInterfaces,hostname${req.nice ? ",setPriority" : ""}`,
  ];
  if (req.allowRemote) {
    args.push(`--allow-net=${hubHosts(req).join(",")}`, `--allow-write=${resolve(req.modelsDir)}`);
  }
  args.push(RUNNER_URL, ...runnerArgs(req));
  return { command: denoCommand(), args, env };
}
