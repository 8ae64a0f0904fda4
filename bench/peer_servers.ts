// Owns starting and stopping the two servers the peer benchmark compares, on the same GGUF file: llama.cpp's
// `llama-server` (as its users start it: -np slots, -c for all of them, -t threads) and this server (a manifest
// with the one model, the same slots and threads), each on a free port, ready when /health answers. Chat
// servers are started with the model loaded before anything is timed (llama-server loads at start; ours is
// asked one short chat). PEER_LOG=1 lets llama-server's log through (its errors, when it will not start).
import { basename, dirname, join } from "node:path";

export interface Server {
  name: "ours" | "llama-server";
  url: string;
  /** The process that serves HTTP (ours: the server, not its model runners). */
  pid: number;
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** The GGUF file. */
  file: string;
  /** "chat" (the model as `bench`) or "embedding" (llama-server --embeddings). */
  task: "chat" | "embedding";
  /** Slots (llama-server -np, ours --parallel). */
  parallel: number;
  /** Context per slot. */
  ctx: number;
  threads: string;
  /** llama-server -ngl / ours --gpu-layers: -1 all. */
  gpuLayers: number;
  /** Ours: --llama-lib. */
  llamaLib?: string;
}

const ROOT = new URL("../", import.meta.url).pathname;

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function waitHealthy(url: string, child: Deno.ChildProcess, what: string): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(`${url}/health`);
      await r.body?.cancel();
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    const exited = await Promise.race([
      child.status.then(() => true),
      new Promise((r) => setTimeout(r, 250)),
    ]);
    if (exited === true) throw new Error(`${what} exited before it was ready`);
  }
  throw new Error(`${what} not ready after 300 s`);
}

export async function startLlamaServer(bin: string, o: ServerOptions): Promise<Server> {
  const port = freePort();
  const args = [
    "-m",
    o.file,
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "-np",
    String(o.parallel),
    "-c",
    String(o.ctx * o.parallel),
    "-t",
    o.threads,
    "-ngl",
    o.gpuLayers !== 0 ? "999" : "0",
    "--no-webui",
    ...(o.task === "embedding" ? ["--embeddings", "-b", "2048", "-ub", "2048"] : []),
  ];
  const child = new Deno.Command(bin, {
    args,
    stdout: "null",
    stderr: Deno.env.get("PEER_LOG") ? "inherit" : "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, child, "llama-server");
  return {
    name: "llama-server",
    url,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** Ours; `warm` runs once it is healthy (loads the model before anything is timed). */
export async function startOurs(o: ServerOptions, warm: (url: string) => Promise<unknown>): Promise<Server> {
  const port = freePort();
  const tmp = await Deno.makeTempDir({ prefix: "peer-bench-" });
  const manifest = join(tmp, "manifest.json");
  const options = o.task === "chat" ? { context_length: o.ctx } : {};
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({ models: { bench: { task: o.task, path: basename(o.file), options } } }),
  );
  const args = [
    "run",
    "-A",
    join(ROOT, "main.ts"),
    `--port=${port}`,
    "--host=127.0.0.1",
    `--models-dir=${dirname(o.file)}`,
    `--manifest=${manifest}`,
    "--offline",
    `--parallel=${o.parallel}`,
    `--threads=${o.threads}`,
    `--gpu-layers=${o.gpuLayers}`,
    "--queue-size=256",
    `--data-dir=${tmp}`,
    "--store-url=none",
    ...(o.llamaLib ? [`--llama-lib=${o.llamaLib}`] : []),
  ];
  // The log goes to a file (its tail read for errors): piped to this process, every log line (one a request,
  // the /health probe's included) woke the benchmark to read it, on the cores the server decodes on, while
  // llama-server's log goes nowhere.
  const log = join(tmp, "server.log");
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", 'log="$1"; shift; exec "$@" 2>"$log"', "sh", log, Deno.execPath(), ...args],
    cwd: ROOT,
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHealthy(url, child, "this server");
    await warm(url);
  } catch (e) {
    child.kill("SIGTERM");
    await child.status;
    const tail = await Deno.readTextFile(log).then((t) => t.slice(-4000), () => "");
    throw new Error(`${(e as Error).message}\n${tail}`);
  }
  return {
    name: "ours",
    url,
    // `sh -c 'exec ...'`: the server took the shell's process.
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    },
  };
}
