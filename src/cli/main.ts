// Owns the sub-commands of main.ts (`pull`, `list`): recognises them, parses their flags and the server's
// shared ones, runs them, and turns any failure into one line on stderr and a non-zero exit code.
import { parseArgs } from "node:util";
import { ConfigError, OPTIONS, parseConfig } from "../config.ts";
import { ManifestError } from "../engines/manifest.ts";
import { HubError } from "../hub/errors.ts";
import { takeFlags, UsageError } from "./args.ts";
import { type CliIo, PULL_FLAGS, PULL_USAGE, runPull } from "./pull.ts";
import { formatTable, listRows } from "./list.ts";
import { ManifestFileError } from "./manifest_file.ts";

const COMMANDS = {
  pull: { ...PULL_FLAGS, help: "bool" },
  list: { json: "bool", help: "bool" },
} as const;

const LIST_USAGE = `Usage: deno run -A main.ts list [--json] [--models-dir=...] [--manifest=...]

Lists the manifest's models: task, source, whether their files are on disk (yes, partial, no) and size.`;

type Command = keyof typeof COMMANDS;

/** The sub-command named by the first positional argument, if any. */
function commandOf(args: string[]): Command | undefined {
  // Flags are skipped with their values (`--models-dir pull` names a folder, not a command) without
  // validating anything: bad values are reported by the command itself, or by the server's start.
  const all = { ...COMMANDS.pull, ...COMMANDS.list };
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const [flag, kind] of Object.entries(all)) {
    options[flag] = { type: kind === "bool" ? "boolean" : "string" };
  }
  for (const o of OPTIONS) options[o.flag] = { type: o.kind === "bool" ? "boolean" : "string" };
  const first = parseArgs({ args, options, strict: false, allowPositionals: true }).positionals[0];
  return first !== undefined && Object.hasOwn(COMMANDS, first) ? first as Command : undefined;
}

function defaultIo(): CliIo {
  return {
    out: (l) => console.log(l),
    err: (l) => console.error(l),
    env: Deno.env.toObject(),
  };
}

/**
 * Runs a sub-command and returns its exit code, or `undefined` when `args` name none (the server starts).
 * Exit codes: 0 done, 1 failed, 2 bad usage or configuration, 130 interrupted.
 */
export async function runCli(args: string[], io: CliIo = defaultIo()): Promise<number | undefined> {
  const command = commandOf(args);
  if (!command) return undefined;
  const controller = new AbortController();
  const onSigint = () => controller.abort(new Error("interrupted"));
  const ownSignal = !io.signal;
  if (ownSignal) Deno.addSignalListener("SIGINT", onSigint);
  try {
    const { flags, rest } = takeFlags(args, COMMANDS[command]);
    if (flags.help || rest.includes("-h")) {
      io.out(command === "pull" ? PULL_USAGE : LIST_USAGE);
      return 0;
    }
    const parsed = parseConfig(rest, io.env);
    const config = parsed.config!;
    const positionals = parsed.positionals.slice(1);
    if (command === "pull") {
      if (positionals.length !== 1) throw new UsageError(`pull takes one repo or model id (see pull --help)`);
      return await runPull(config, positionals[0], flags, { ...io, signal: io.signal ?? controller.signal });
    }
    if (positionals.length !== 0) {
      throw new UsageError(`list takes no arguments (got ${positionals.join(" ")})`);
    }
    const rows = await listRows(config);
    if (flags.json) io.out(JSON.stringify(rows, null, 2));
    else for (const line of formatTable(rows)) io.out(line);
    return 0;
  } catch (e) {
    // Our own errors carry a complete sentence; anything else also gets its kind (PermissionDenied, ...).
    const ours = e instanceof HubError || e instanceof ManifestError || e instanceof ManifestFileError ||
      e instanceof UsageError || e instanceof ConfigError;
    const msg = e instanceof Error ? e.message : String(e);
    io.err(`error: ${ours || !(e instanceof Error) ? "" : `${e.name}: `}${msg.split("\n")[0]}`);
    if (e instanceof UsageError || e instanceof ConfigError) return 2;
    if (controller.signal.aborted || io.signal?.aborted) return 130;
    return 1;
  } finally {
    if (ownSignal) Deno.removeSignalListener("SIGINT", onSigint);
  }
}
