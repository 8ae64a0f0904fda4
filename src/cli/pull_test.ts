import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeHub } from "../../tests/fake_hub.ts";
import { parseConfig } from "../config.ts";
import type { PullPlan } from "../hub/select.ts";
import { applyPull, type CliIo, derivedId, runPull } from "./pull.ts";
import { UsageError } from "./args.ts";

const transformers: PullPlan = {
  kind: "transformers",
  engine: "transformers",
  task: "chat",
  dtype: "q4",
  files: [],
};
const whisper: PullPlan = {
  kind: "whisper",
  engine: "whisper.cpp",
  task: "transcription",
  file: "ggml-base.en.bin",
  files: [],
};

Deno.test("cli pull: ids derived from the repo or the ggml file", () => {
  assert.equal(derivedId(transformers, "onnx-community/Qwen2.5-0.5B-Instruct"), "qwen2.5-0.5b-instruct");
  assert.equal(derivedId(whisper, "ggerganov/whisper.cpp"), "whisper-base.en");
});

Deno.test("cli pull: an update keeps the entry's other keys and order; a new entry may become the default", () => {
  const doc = {
    defaults: { chat: "old" },
    aliases: { "gpt-4o": "@chat" },
    models: {
      old: { task: "chat" as const, repo: "o/old", dtype: "fp32", owned_by: "me", device: "cpu" },
      w: { task: "transcription" as const, repo: "g/w", options: { file: "ggml-a.bin", threads: 2 } },
    },
  };
  const up = applyPull(doc, "old", "o/old", transformers, 42);
  assert.equal(up.added, false);
  assert.equal(up.madeDefault, false);
  assert.deepEqual(Object.keys(up.doc.models.old), ["task", "repo", "dtype", "owned_by", "device"]);
  assert.equal(up.doc.models.old.dtype, "q4");
  assert.equal(doc.models.old.dtype, "fp32", "the input is not modified");
  const w = applyPull(doc, "w", "g/w", whisper, 42);
  assert.deepEqual(w.doc.models.w.options, { file: "ggml-base.en.bin", threads: 2 });
  assert.equal(w.madeDefault, true);
  assert.equal(w.doc.defaults.transcription, "w");
  const added = applyPull(doc, "new", "o/new", transformers, 42);
  assert.deepEqual(added.doc.models.new, { task: "chat", repo: "o/new", dtype: "q4", created: 42 });
  assert.deepEqual(Object.keys(added.doc.models), ["old", "w", "new"]);
});

Deno.test("cli pull: aliases and ids pick their entry; clashes are refused before any download", async () => {
  const src = await Deno.makeTempDir();
  const models = await Deno.makeTempDir();
  await Deno.mkdir(join(src, "onnx"));
  await Deno.writeTextFile(join(src, "config.json"), "{}");
  await Deno.writeFile(join(src, "onnx", "model_q4.onnx"), new Uint8Array(100));
  await Deno.writeFile(join(src, "onnx", "model.onnx"), new Uint8Array(300));
  const hub = await startFakeHub({
    "org/Chatty": { dir: src, pipelineTag: "text-generation" },
    "org/other": { dir: src, pipelineTag: "text-generation" },
  });
  const out: string[] = [];
  const io: CliIo = {
    out: (l) => out.push(l),
    err: () => {},
    env: { HF_ENDPOINT: hub.url },
    progress: { begin: () => ({ update() {}, finish() {}, fail() {} }), note() {} },
  };
  const { config } = parseConfig([`--models-dir=${models}`], {}, models);
  const manifest = join(models, "manifest.json");
  const read = async () => JSON.parse(await Deno.readTextFile(manifest));
  const downloads = () => hub.requests.filter((r) => r.path.includes("/resolve/")).length;
  try {
    await Deno.writeTextFile(
      manifest,
      JSON.stringify({
        defaults: { chat: "chatty" },
        aliases: { "gpt-4o": "@chat" },
        models: {
          chatty: { task: "chat", repo: "org/Chatty", dtype: "fp32" },
          local: { task: "chat", path: "x" },
        },
      }),
    );
    // Through the alias to the entry, keeping its dtype.
    assert.equal(await runPull(config!, "gpt-4o", {}, io), 0);
    assert.match(out.join("\n"), /as "chatty" \(chat, dtype fp32\)/);
    // The same repo named directly updates that entry instead of adding "chatty" twice.
    assert.equal(await runPull(config!, "org/Chatty", { dtype: "q4" }, io), 0);
    assert.deepEqual(Object.keys((await read()).models), ["chatty", "local"]);
    assert.equal((await read()).models.chatty.dtype, "q4");
    // A derived id that is taken by another repo, or an --as naming another model: refused, nothing fetched.
    await Deno.writeTextFile(
      manifest,
      JSON.stringify({
        ...(await read()),
        models: { ...(await read()).models, other: { task: "chat", repo: "o/x" } },
      }),
    );
    const before = downloads();
    await assert.rejects(
      () => runPull(config!, "org/other", {}, io),
      UsageError,
      'model id "other" is already',
    );
    await assert.rejects(
      () => runPull(config!, "org/other", { as: "chatty" }, io),
      UsageError,
      "already names org/Chatty",
    );
    await assert.rejects(
      () => runPull(config!, "org/other", { as: "gpt-4o" }, io),
      /aliases.gpt-4o: shadows a model id/,
    );
    await assert.rejects(() => runPull(config!, "local", {}, io), UsageError, "is a local model");
    await assert.rejects(() => runPull(config!, "org/other", { as: "bad id" }, io), UsageError);
    await assert.rejects(() => runPull(config!, "org/other", { retries: "x" }, io), UsageError);
    assert.equal(downloads(), before);
    assert.equal(await runPull(config!, "org/other", { as: "other2" }, io), 0);
    assert.equal((await read()).models.other2.repo, "org/other");
  } finally {
    await hub.close();
    await Deno.remove(src, { recursive: true });
    await Deno.remove(models, { recursive: true });
  }
});
