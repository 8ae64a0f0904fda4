// Owns the entry point of a model's runner process (--isolation=process, the default): the compute side
// (serve_model.ts) in a process of its own, so an abort or a segfault in a native library ends this process
// and not the server. The server's messages arrive as frames (frames.ts) on stdin and ours leave on stdout;
// stderr is the native libraries' own and the server keeps its last lines to say why a runner died. When
// stdin closes (the server is gone), the runner exits.
import { setPriority } from "node:os";
import { encodeFrame, FrameReader } from "./frames.ts";
import { type HostMessage, NICE_ARG } from "./protocol.ts";
import { serveModel } from "./serve_model.ts";

function writeAll(bytes: Uint8Array): void {
  // Synchronous: frames stay whole and in order, and a server that reads slowly slows this side down.
  let at = 0;
  while (at < bytes.length) at += Deno.stdout.writeSync(bytes.subarray(at));
}

/**
 * Lowers this runner's CPU priority by the increment on its command line, first thing: on Linux it is the
 * calling thread's, and every thread it starts later (the model libraries' thread pools) inherits it.
 */
function lowerPriority(args: string[]): void {
  const arg = args.find((a) => a.startsWith(NICE_ARG));
  if (!arg) return;
  try {
    setPriority(Number(arg.slice(NICE_ARG.length)));
  } catch (e) {
    console.error(`the runner's priority could not be lowered: ${(e as Error).message}`);
  }
}

export async function runRunner(): Promise<never> {
  lowerPriority(Deno.args);
  const receive = serveModel({
    postMessage: (m) => writeAll(encodeFrame(m)),
    onDisposed: () => Deno.exit(0),
  }, true);
  const reader = new FrameReader();
  for await (const chunk of Deno.stdin.readable) {
    const { messages } = reader.push(chunk);
    for (const m of messages) receive(m as HostMessage);
  }
  Deno.exit(0);
}

if (import.meta.main) await runRunner();
