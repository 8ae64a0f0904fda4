// Owns log output: one line per event, as text or JSON, to stderr so stdout stays free for commands
// (pull, list) that print results.

/** Where every layer writes its log lines; fields become JSON keys or key=value pairs. */
export interface Logger {
  /** Dropped unless the log level is debug. */
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export type LogFormat = "json" | "text";

export type LogLevel = "debug" | "info";

export function createLogger(
  format: LogFormat,
  sink: (line: string) => void = defaultSink,
  level: LogLevel = "info",
): Logger {
  const emit = (level: string, msg: string, fields?: Record<string, unknown>) => {
    const time = new Date().toISOString();
    if (format === "json") {
      sink(JSON.stringify({ time, level, msg, ...fields }));
    } else {
      const rest = fields
        ? Object.entries(fields)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${typeof v === "string" && !/\s/.test(v) ? v : JSON.stringify(v)}`)
          .join(" ")
        : "";
      sink(`${time} ${level.toUpperCase().padEnd(5)} ${msg}${rest ? " " + rest : ""}`);
    }
  };
  return {
    debug: level === "debug" ? (m, f) => emit("debug", m, f) : () => {},
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

const encoder = new TextEncoder();
function defaultSink(line: string): void {
  try {
    Deno.stderr.writeSync(encoder.encode(line + "\n"));
  } catch {
    // A closed stderr must never take the server down.
  }
}

/** A logger that keeps lines in memory, for tests. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(createLogger("json", (l) => lines.push(l), "debug"), { lines });
}
