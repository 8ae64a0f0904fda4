import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "./main.ts";
import type { CliIo } from "./pull.ts";

function io(env: Record<string, string> = {}): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    env,
    signal: new AbortController().signal,
  };
}

Deno.test("cli: without a sub-command the server starts (undefined), whatever the flags", async () => {
  assert.equal(await runCli([], io()), undefined);
  assert.equal(
    await runCli(["--port=0", "--models-dir", "pull"], io()),
    undefined,
    "a flag's value is no command",
  );
  assert.equal(await runCli(["serve"], io()), undefined);
});

Deno.test("cli: help, usage errors and failures are one line with the right exit code", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let x = io();
    assert.equal(await runCli(["pull", "--help"], x), 0);
    assert.match(x.stdout.join("\n"), /^Usage: deno task pull/);
    x = io();
    assert.equal(await runCli(["list", "-h"], x), 0);
    assert.match(x.stdout[0], /^Usage: .* list/);

    x = io();
    assert.equal(await runCli(["pull", "--port=abc", "o/n"], x), 2);
    assert.deepEqual(x.stderr, ['error: --port: expected an integer (got "abc")']);
    x = io();
    assert.equal(await runCli(["list", "extra"], x), 2);
    x = io();
    assert.equal(await runCli(["list", `--models-dir=${dir}`], x), 1);
    assert.equal(x.stderr.length, 1);
    assert.match(x.stderr[0], /^error: cannot read manifest .*manifest\.json/);
    // The hub is unreachable: one line, exit 1 (retries disabled to keep it quick).
    x = io({ HF_ENDPOINT: "http://127.0.0.1:9" });
    assert.equal(await runCli(["pull", "o/n", `--models-dir=${dir}`, "--retries=0"], x), 1);
    assert.equal(x.stderr.length, 1);
    assert.match(x.stderr[0], /^error: cannot reach http:\/\/127\.0\.0\.1:9/);
    assert.equal(await Deno.stat(join(dir, "manifest.json")).catch(() => null), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
