import assert from "node:assert/strict";
import { join } from "node:path";
import { assertRealInside, checkRepoFile, checkRepoId, destinationOf, isRepoId } from "./paths.ts";
import { HubError } from "./errors.ts";

Deno.test("paths: ordinary repo file names pass unchanged", () => {
  for (
    const ok of ["config.json", "onnx/model_q4.onnx", "1_Pooling/config.json", "a..b/c", "ggml-base.en.bin"]
  ) {
    assert.equal(checkRepoFile(ok), ok);
  }
});

Deno.test("paths: names that could leave the repo folder are refused", () => {
  const bad = [
    "",
    "../x",
    "a/../../b",
    "..",
    "./a",
    "a/./b",
    "/etc/passwd",
    "C:\\x",
    "C:/x",
    "a\\..\\b",
    "a//b",
    "a/",
    "a\u0000b",
    "a\nb",
    "x".repeat(2000),
    42,
    null,
  ];
  for (const name of bad) {
    assert.throws(() => checkRepoFile(name), HubError, JSON.stringify(name));
  }
});

Deno.test("paths: destinations stay under the root", () => {
  assert.equal(destinationOf("/m/hub/o/n", "onnx/model.onnx"), "/m/hub/o/n/onnx/model.onnx");
  assert.throws(() => destinationOf("/m/hub/o/n", "../../../etc/passwd"), HubError);
  assert.throws(() => destinationOf("/m/hub/o/n", "/etc/passwd"), HubError);
});

Deno.test("paths: repo ids are exactly owner/name", () => {
  for (
    const ok of ["Xenova/all-MiniLM-L6-v2", "onnx-community/Qwen2.5-0.5B-Instruct", "ggerganov/whisper.cpp"]
  ) {
    assert.equal(checkRepoId(ok), ok);
  }
  for (const bad of ["x", "a/b/c", "../x", "a/..", "/a/b", "a/b/", ".a/b", "a/b?x=1", "a/b#c", "a /b"]) {
    assert.equal(isRepoId(bad), false, bad);
    assert.throws(() => checkRepoId(bad), HubError);
  }
});

Deno.test("paths: a symlink inside the repo folder cannot redirect a download outside it", async () => {
  const root = await Deno.makeTempDir();
  const outside = await Deno.makeTempDir();
  try {
    const repo = join(root, "hub", "o", "n");
    await Deno.mkdir(repo, { recursive: true });
    await Deno.mkdir(join(repo, "onnx"));
    await assertRealInside(repo, join(repo, "onnx"));
    await Deno.symlink(outside, join(repo, "evil"));
    await assert.rejects(() => assertRealInside(repo, join(repo, "evil")), HubError, "outside");
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});
