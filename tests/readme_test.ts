// Keeps the README honest: every flag and environment variable is documented, and every `deno task` it
// names exists in deno.json.
import assert from "node:assert/strict";
import { join } from "node:path";
import { OPTIONS } from "../src/config.ts";
import { REPO_ROOT } from "./helpers.ts";

const readme = await Deno.readTextFile(join(REPO_ROOT, "README.md"));
const denoJson = JSON.parse(await Deno.readTextFile(join(REPO_ROOT, "deno.json")));

Deno.test("readme: documents every flag and environment variable", () => {
  for (const o of OPTIONS) {
    assert.ok(readme.includes(`--${o.flag}`), `--${o.flag} is not in the README`);
    assert.ok(readme.includes(o.env), `${o.env} is not in the README`);
  }
});

Deno.test("readme: every deno task it names exists", () => {
  const named = [...readme.matchAll(/deno task ([a-z:-]+)/g)].map((m) => m[1]);
  assert.ok(named.includes("start") && named.includes("test"));
  for (const task of named) assert.ok(task in denoJson.tasks, `deno task ${task} is not in deno.json`);
});

Deno.test("readme: the client matrix names the versions deno.json pins, and each client has its test", async () => {
  const section = readme.slice(readme.indexOf("### Client matrix"), readme.indexOf("## Models"));
  const rows = section.split("\n").filter((l) => l.startsWith("| `"));
  assert.ok(rows.length >= 6, "the matrix has its rows");
  // Claude Code's CLI is pinned by .ci/run (a native binary installed with npm, not an import).
  const ci = await Deno.readTextFile(join(REPO_ROOT, ".ci", "run"));
  const claudeCode = /^CLAUDE_CODE_VERSION=(\S+)$/m.exec(ci)?.[1];
  assert.ok(claudeCode, ".ci/run pins Claude Code's version");
  const pins = [
    ...Object.values(denoJson.imports as Record<string, string>).map((v) => v.replace(/^npm:\/?/, "")),
    `@anthropic-ai/claude-code@${claudeCode}`,
  ];
  const pinOf = (pkg: string) =>
    pins.find((p) => p.startsWith(`${pkg}@`))?.slice(pkg.length + 1).replace(/\/$/, "");
  for (const row of rows) {
    const [client, version] = row.split("|").slice(1, 3);
    const pkgs = [...client.matchAll(/`(@?[a-z][a-z0-9-]*(?:\/[a-z0-9-]+)?)`/g)].map((m) => m[1]).filter(
      pinOf,
    );
    const versions = [...version.matchAll(/\d+\.\d+\.\d+/g)].map((m) => m[0]);
    assert.deepEqual(versions, pkgs.map(pinOf), `${client.trim()}: ${version.trim()}`);
  }
  for (
    const f of [
      "openai_sdk",
      "vercel_ai",
      "langchain",
      "openai_agents",
      "anthropic_sdk",
      "ai_sdk_anthropic",
      "langchain_anthropic",
      "claude_code",
    ]
  ) {
    await Deno.stat(join(REPO_ROOT, "tests", "clients", `${f}_test.ts`));
  }
});

Deno.test("readme: every playback family has its row in the family table, and every row but one is tested", async () => {
  const { FAMILIES } = await import("../tools/models/playback_families.ts");
  const section = readme.slice(readme.indexOf("#### Model families"), readme.indexOf("### Responses API"));
  const rows = section.split("\n").filter((l) =>
    l.startsWith("| ") && !l.startsWith("| ---") && !l.startsWith("| family")
  );
  for (const f of FAMILIES) assert.ok(rows.some((r) => r.startsWith(`| ${f.row} `)), `${f.row} has no row`);
  const untested = rows.filter((r) => !FAMILIES.some((f) => r.startsWith(`| ${f.row} `)));
  assert.deepEqual(untested.map((r) => r.split(" | ")[0].slice(2).trim()), [
    "Command R (`Action:` + `tool_name`)",
  ]);
});
