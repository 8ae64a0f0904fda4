// Owns the fallback decoder: ffmpeg, when it is on the PATH (or named by OAI_FFMPEG), for containers and codecs
// the built-in decoders lack. The file goes in on stdin and 16 kHz mono f32le comes out on stdout, so nothing
// touches the disk; a deadline and the request's signal kill it.
import { SAMPLE_RATE } from "./resample.ts";

export function ffmpegPath(): string {
  return Deno.env.get("OAI_FFMPEG") || "ffmpeg";
}

/** Decodes with ffmpeg; returns undefined when ffmpeg is not installed, throws Error when it fails. */
export async function decodeWithFfmpeg(
  bytes: Uint8Array,
  opts: { signal?: AbortSignal; timeoutMs?: number; bin?: string } = {},
): Promise<Float32Array | undefined> {
  const args = ["-nostdin", "-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-vn", "-ac", "1"];
  args.push("-ar", String(SAMPLE_RATE), "-f", "f32le", "pipe:1");
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(opts.bin ?? ffmpegPath(), {
      args,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    })
      .spawn();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  const kill = () => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  };
  const timer = setTimeout(kill, opts.timeoutMs ?? 120_000);
  opts.signal?.addEventListener("abort", kill, { once: true });
  try {
    const writer = child.stdin.getWriter();
    // ffmpeg may exit before reading everything (bad input); a broken pipe is then expected, not an error.
    const writing = writer.write(bytes).then(() => writer.close()).catch(() => {});
    const out = await child.output();
    await writing;
    if (!out.success) {
      const why = new TextDecoder().decode(out.stderr).trim().split("\n").pop() ?? "";
      throw new Error(`ffmpeg failed: ${why || `exit code ${out.code}`}`);
    }
    const usable = out.stdout.byteLength - (out.stdout.byteLength % 4);
    return new Float32Array(out.stdout.buffer.slice(out.stdout.byteOffset, out.stdout.byteOffset + usable));
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", kill);
  }
}
