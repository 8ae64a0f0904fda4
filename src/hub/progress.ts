// Owns how a pull shows progress: on a terminal one cli-progress bar per file (bytes, speed, ETA); when stderr
// is not a terminal (CI logs, pipes) one plain line per finished file, so logs stay readable.
import cliProgress from "cli-progress";
import process from "node:process";

export interface FileProgress {
  update(done: number): void;
  finish(note: string): void;
  fail(): void;
}

export interface ProgressSink {
  begin(label: string, total: number): FileProgress;
  /** A message between files (retries, warnings); must not garble a bar being drawn. */
  note(line: string): void;
}

/** Decimal units, as the hub shows sizes. */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let v = n;
  let i = -1;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[i]}`;
}

/** The part of cli-progress's SingleBar used here (the package ships no types). */
interface Bar {
  start(total: number, start: number, payload: Record<string, string>): void;
  update(value: number, payload: Record<string, string>): void;
  stop(): void;
}
const SingleBar = (cliProgress as { SingleBar: new (opts: Record<string, unknown>) => Bar }).SingleBar;

/** Bytes per second over the last few seconds, so the figure follows the link rather than the average. */
class Speed {
  #samples: [number, number][] = [];
  add(done: number, now = performance.now()): number {
    this.#samples.push([now, done]);
    while (this.#samples.length > 2 && now - this.#samples[0][0] > 3000) this.#samples.shift();
    const [t0, d0] = this.#samples[0];
    return now > t0 ? ((done - d0) * 1000) / (now - t0) : 0;
  }
}

function barSink(): ProgressSink {
  let active: Bar | undefined;
  return {
    begin(label, total) {
      const bar = new SingleBar({
        format: "{file} |{bar}| {percentage}% {done}/{size} {speed} ETA {eta_formatted}",
        barsize: 30,
        hideCursor: true,
        stream: process.stderr,
        etaBuffer: 50,
        fps: 8,
      });
      const speed = new Speed();
      let started = false;
      const payload = (done: number, bps: number) => ({
        file: label,
        done: formatBytes(done),
        size: formatBytes(total),
        speed: `${formatBytes(Math.round(bps))}/s`,
      });
      active = bar;
      return {
        update(done) {
          const bps = speed.add(done);
          if (!started) {
            bar.start(total, done, payload(done, 0));
            started = true;
          } else bar.update(done, payload(done, bps));
        },
        finish(note) {
          if (!started) bar.start(total, total, payload(total, 0));
          bar.update(total, { ...payload(total, 0), speed: note });
          bar.stop();
          active = undefined;
        },
        fail() {
          if (started) bar.stop();
          active = undefined;
        },
      };
    },
    note(line) {
      if (active) process.stderr.write("\n");
      console.error(line);
    },
  };
}

function lineSink(write: (line: string) => void): ProgressSink {
  return {
    begin(label, total) {
      const t0 = performance.now();
      let first: number | undefined;
      let last = 0;
      return {
        update(done) {
          first ??= done;
          last = done;
        },
        finish(note) {
          const secs = (performance.now() - t0) / 1000;
          const moved = last - (first ?? last);
          const rate = secs > 0 && moved > 0 ? `, ${formatBytes(Math.round(moved / secs))}/s` : "";
          write(`${label}  ${formatBytes(total)}  ${note} in ${secs.toFixed(1)}s${rate}`);
        },
        fail() {},
      };
    },
    note: write,
  };
}

/** Bars on a terminal, plain lines otherwise; `write` receives the plain lines (default: stderr). */
export function terminalProgress(
  tty = Deno.stderr.isTerminal(),
  write: (line: string) => void = (l) => console.error(l),
): ProgressSink {
  return tty ? barSink() : lineSink(write);
}
