// Owns the command line of the sub-commands: their own flags (--dtype, --task, ...) are taken out first and
// the rest goes to the server's `parseConfig`, so `--models-dir`, `--manifest` and their environment twins
// mean exactly what they mean for the server.
export type FlagKind = "string" | "bool";

export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Removes the flags named in `spec` from `args` (`--name value`, `--name=value`, bare `--name` for bools)
 * and returns them with the remaining arguments, in order.
 */
export function takeFlags(
  args: string[],
  spec: Record<string, FlagKind>,
): { flags: Record<string, string | boolean>; rest: string[] } {
  const flags: Record<string, string | boolean> = {};
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      rest.push(...args.slice(i));
      break;
    }
    const m = /^--([\w-]+)(?:=(.*))?$/s.exec(a);
    const kind = m ? spec[m[1]] : undefined;
    if (!m || !kind) {
      rest.push(a);
      continue;
    }
    const name = m[1];
    if (kind === "bool") {
      if (m[2] === undefined) flags[name] = true;
      else if (/^(1|true|yes|on)$/i.test(m[2])) flags[name] = true;
      else if (/^(0|false|no|off)$/i.test(m[2])) flags[name] = false;
      else throw new UsageError(`--${name}: expected true or false (got "${m[2]}")`);
    } else if (m[2] !== undefined) {
      flags[name] = m[2];
    } else {
      const v = args[i + 1];
      if (v === undefined || v.startsWith("--")) throw new UsageError(`--${name}: needs a value`);
      flags[name] = v;
      i++;
    }
  }
  return { flags, rest };
}
