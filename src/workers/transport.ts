// Owns how the server reaches a model's compute side: a runner process (the default; an abort or segfault in
// a native library ends that process only, and the server reports why) or a Worker thread of the server's own
// process (--isolation=thread, the old way, kept to measure the process boundary against). Both carry the
// same messages (protocol.ts); a runner's through frames (frames.ts) on its stdin and stdout.
import { encodeFrame, FrameReader } from "./frames.ts";
import type { GuestMessage, HostMessage } from "./protocol.ts";
import type { RunnerCommand } from "./runner_command.ts";

export type Isolation = "process" | "thread";

/** What a transport tells its link. */
export interface TransportEvents {
  message(m: GuestMessage): void;
  /** The compute side ended on its own (not by terminate()): why, in words fit for a client. */
  died(reason: string): void;
}

export interface Transport {
  post(m: HostMessage, transfer?: Transferable[]): void;
  /** Ends the compute side now. */
  terminate(): void;
  /** The runner's process id (processes only). */
  readonly pid?: number;
}

const GUEST_URL = new URL("./guest.ts", import.meta.url).href;

/** A Worker on a thread of this process. */
export function threadTransport(name: string, on: TransportEvents): Transport {
  const worker = new Worker(GUEST_URL, { type: "module", name });
  let ended = false;
  worker.onmessage = (e: MessageEvent<GuestMessage>) => on.message(e.data);
  worker.onerror = (e: ErrorEvent) => {
    // Unhandled, a worker's error would end the whole process.
    e.preventDefault();
    if (!ended) on.died(`it failed while computing: ${e.message}`);
  };
  worker.onmessageerror = () => on.died("it sent a message that could not be read");
  return {
    post: (m, transfer) => worker.postMessage(m, transfer ?? []),
    terminate: () => {
      ended = true;
      worker.terminate();
    },
  };
}

/** The most a read of a runner's stdout takes at once. */
const READ_BYTES = 64 * 1024;

/** Lines of a runner's stderr kept to say why it died. */
const TAIL_LINES = 40;

/** A runner process started with `cmd` (its permissions scoped to its engine, see runner_command.ts). */
export function processTransport(cmd: RunnerCommand, on: TransportEvents): Transport {
  const child = new Deno.Command(cmd.command, {
    args: cmd.args,
    env: cmd.env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let ended = false;
  const writer = child.stdin.getWriter();
  const tail: string[] = [];
  let assertLine: string | undefined;
  const stderrDone = (async () => {
    let buf = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const line of lines) {
        // The native libraries' own output, passed on as it was when they ran in this process.
        Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
        tail.push(line);
        if (tail.length > TAIL_LINES) tail.shift();
        // An assert line is kept apart: gdb's backtrace of every thread (ggml prints one on abort) can run
        // to hundreds of lines after it.
        if (LAST_WORDS[0].test(line)) assertLine = line;
      }
    }
    if (buf) tail.push(buf);
  })().catch(() => {});
  const stdoutDone = (async () => {
    const reader = new FrameReader();
    // One buffer read into again and again (BYOB): the default reader allocates 64 KiB per read, a read per
    // streamed token, and the collector's work on them cost the HTTP thread ~50 µs a token.
    const bytes = child.stdout.getReader({ mode: "byob" });
    let buffer = new ArrayBuffer(READ_BYTES);
    while (true) {
      const { done, value } = await bytes.read(new Uint8Array(buffer));
      if (done || !value) break;
      buffer = value.buffer as ArrayBuffer;
      const { messages, stray } = reader.push(value);
      for (const m of messages) on.message(m as GuestMessage);
      for (const s of stray) {
        const text = new TextDecoder().decode(s).trimEnd();
        if (text) tail.push(...text.split("\n"));
      }
    }
  })().catch(() => {});
  child.status.then(async (status) => {
    await Promise.all([stderrDone, stdoutDone]);
    if (!ended) on.died(crashReason(status, assertLine ? [assertLine, ...tail] : tail));
  });
  return {
    pid: child.pid,
    post: (m) => {
      if (ended) return;
      writer.write(encodeFrame(m)).catch(() => {});
    },
    terminate: () => {
      if (ended) return;
      ended = true;
      writer.close().catch(() => {});
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    },
  };
}

const SIGNALS: Record<string, string> = {
  SIGABRT: "aborted",
  SIGSEGV: "crashed (segmentation fault)",
  SIGBUS: "crashed (bus error)",
  SIGILL: "crashed (illegal instruction)",
  SIGFPE: "crashed (arithmetic error)",
  SIGKILL: "was killed (out of memory, or by another process)",
  SIGTERM: "was terminated",
};

/**
 * What a line of a native library's last words looks like: first an assert or a panic, else any line that
 * says error (never a backtrace frame, "#2  0x... in ggml_abort ()").
 */
const LAST_WORDS = [
  /GGML_ASSERT|GGML_ABORT\(|Assertion .*failed|panicked at|terminate called/,
  /fatal|error|abort/i,
];
const BACKTRACE = /^\s*#\d+\s|^\[New LWP|^\[Thread/;

/**
 * Why a runner ended, for the requests it held and for /v1/models: the signal or exit code, and the assert
 * line from its stderr when there is one, with every path cut to its file name (a client never sees the
 * server's folders).
 */
export function crashReason(status: Deno.CommandStatus, tail: readonly string[]): string {
  const what = status.signal
    ? SIGNALS[status.signal] ?? `ended by ${status.signal}`
    : `exited with code ${status.code}`;
  const lines = tail.filter((l) => !BACKTRACE.test(l));
  const line = LAST_WORDS.map((re) => lines.findLast((l) => re.test(l))).find((l) => l)?.trim();
  return line ? `its runner ${what}: ${stripPaths(line).slice(0, 300)}` : `its runner ${what}`;
}

/** "/home/u/llama.cpp/src/llama-model.cpp:123: GGML_ASSERT(x) failed" -> "llama-model.cpp:123: ...". */
export function stripPaths(line: string): string {
  return line.replace(/(?:[A-Za-z]:)?(?:[\\/][^\\/\s:'"()]+)+[\\/]([^\\/\s:'"()]+)/g, "$1");
}
