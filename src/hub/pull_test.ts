import assert from "node:assert/strict";
import { GGUF_FORMAT, ONNX_FORMAT, WHISPER_FORMAT } from "./select.ts";
import { join } from "node:path";
import { startFakeHub } from "../../tests/fake_hub.ts";
import { HubClient } from "./client.ts";
import { pullModel } from "./pull.ts";
import type { ProgressSink } from "./progress.ts";

async function repoDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "hub-src-" });
  await Deno.mkdir(join(dir, "onnx"));
  await Deno.mkdir(join(dir, "1_Pooling"));
  await Deno.writeTextFile(join(dir, "config.json"), '{"model_type":"bert"}');
  await Deno.writeTextFile(join(dir, "tokenizer.json"), '{"model":{}}');
  await Deno.writeTextFile(join(dir, "1_Pooling", "config.json"), '{"pooling_mode_mean_tokens":true}');
  await Deno.writeTextFile(join(dir, "README.md"), "# readme");
  await Deno.writeFile(join(dir, "onnx", "model.onnx"), new Uint8Array(70_000).fill(1));
  await Deno.writeFile(join(dir, "onnx", "model_quantized.onnx"), new Uint8Array(20_000).fill(2));
  return dir;
}

function recorder(): ProgressSink & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    begin: (label, total) => ({
      update: () => {},
      finish: (note) => void lines.push(`${label} ${total} ${note}`),
      fail: () => void lines.push(`${label} failed`),
    }),
    note: (l) => void lines.push(l),
  };
}

const FORMATS = [WHISPER_FORMAT, GGUF_FORMAT, ONNX_FORMAT];

Deno.test("pull: the chosen files land under <models>/hub/<owner>/<name>, pinned to one commit", async () => {
  const src = await repoDir();
  const models = await Deno.makeTempDir();
  const hub = await startFakeHub({
    "org/embed": { dir: src, pipelineTag: "feature-extraction", sha: "e".repeat(40) },
  });
  try {
    const client = new HubClient({ endpoint: hub.url });
    const progress = recorder();
    const res = await pullModel(client, {
      repo: "org/embed",
      dtype: "q8",
      modelsDir: models,
      formats: FORMATS,
    }, { progress });
    assert.equal(res.task, "embedding");
    assert.equal(res.dtype, "q8");
    assert.equal(res.commit, "e".repeat(40));
    assert.equal(res.dir, join(models, "hub", "org", "embed"));
    assert.deepEqual(res.pulled.map((f) => f.path).sort(), [
      "1_Pooling/config.json",
      "config.json",
      "onnx/model_quantized.onnx",
      "tokenizer.json",
    ]);
    assert.equal(res.fetched, res.pulled.reduce((n, f) => n + f.size, 0));
    for (const f of res.pulled) {
      assert.deepEqual(await Deno.readFile(join(res.dir, f.path)), hub.file("org/embed", f.path).data);
    }
    await assert.rejects(() => Deno.stat(join(res.dir, "README.md")), Deno.errors.NotFound);
    await assert.rejects(() => Deno.stat(join(res.dir, "onnx", "model.onnx")), Deno.errors.NotFound);
    assert.ok(
      hub.requests.filter((r) => r.path.includes("/resolve/")).every((r) =>
        r.path.includes(`/resolve/${"e".repeat(40)}/`)
      ),
    );
    assert.equal(progress.lines.length, 4);
    assert.ok(
      progress.lines.includes("onnx/model_quantized.onnx 20000 downloaded"),
      progress.lines.join("\n"),
    );

    // Pulling again only checks what is there.
    const again = await pullModel(client, {
      repo: "org/embed",
      dtype: "q8",
      modelsDir: models,
      formats: FORMATS,
    });
    assert.ok(again.pulled.every((f) => f.status === "present"));
    assert.equal(again.fetched, 0);
  } finally {
    await hub.close();
    await Deno.remove(src, { recursive: true });
    await Deno.remove(models, { recursive: true });
  }
});

Deno.test("pull: a listing with an escaping file name writes nothing at all", async () => {
  const src = await repoDir();
  const root = await Deno.makeTempDir();
  const models = join(root, "models");
  await Deno.mkdir(models);
  const hub = await startFakeHub({
    "org/evil": {
      dir: src,
      pipelineTag: "feature-extraction",
      extraSiblings: [{ rfilename: "../../../escaped.json", size: 2, blobId: "0".repeat(40) }],
    },
  });
  try {
    await assert.rejects(
      () =>
        pullModel(new HubClient({ endpoint: hub.url }), {
          repo: "org/evil",
          modelsDir: models,
          formats: FORMATS,
        }),
      /unsafe file name from the hub "..\/..\/..\/escaped.json": ".." segment/,
    );
    assert.deepEqual([...Deno.readDirSync(models)], []);
    assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name), ["models"]);
    assert.equal(hub.requests.filter((r) => r.path.includes("/resolve/")).length, 0);
  } finally {
    await hub.close();
    await Deno.remove(src, { recursive: true });
    await Deno.remove(root, { recursive: true });
  }
});
