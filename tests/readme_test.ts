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
  const named = [...readme.matchAll(/deno task ([a-z:]+)/g)].map((m) => m[1]);
  assert.ok(named.includes("start") && named.includes("test"));
  for (const task of named) assert.ok(task in denoJson.tasks, `deno task ${task} is not in deno.json`);
});
