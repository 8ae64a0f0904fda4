// End to end for model management: the real CLI (`deno run -A main.ts pull|list`) as a subprocess against the
// local hub-layout server (tests/fake_hub.ts) with a temp models folder: files and manifest after a pull,
// resume after a cut connection, a corrupted file refused, a hostile listing refused, `list`, and finally the
// real server listing and serving the pulled model.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { type FakeHub, startFakeHub } from "../fake_hub.ts";
import { MODELS_DIR, REPO_ROOT, startTestServer } from "../helpers.ts";
import type { ManifestJson } from "../../src/engines/manifest.ts";

const EMBED_SRC = join(MODELS_DIR, "generated", "embed-tiny");
const EMBED = "test-org/embed-tiny";
const WHISPER = "test-org/whisper-fake";
const GGUF_REPO = "test-org/chat-tiny-GGUF";

/** The generated model is written by tools/models; wait for its completion marker. */
async function waitForGenerated(dir: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await Deno.stat(join(dir, ".generated"));
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${dir} was not generated (run deno task models:test)`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function sha256(b: Uint8Array): string {
  return createHash("sha256").update(b).digest("hex");
}

async function exists(p: string): Promise<boolean> {
  return await Deno.stat(p).then(() => true, () => false);
}

function randomFile(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

Deno.test("pull and list: the real CLI against a local hub", async (t) => {
  await waitForGenerated(EMBED_SRC);
  const tmp = await Deno.makeTempDir({ prefix: "oai-pull-e2e-" });
  const whisperSrc = join(tmp, "whisper-src");
  await Deno.mkdir(whisperSrc);
  await Deno.writeFile(join(whisperSrc, "ggml-tiny-test.bin"), randomFile(150_000));
  await Deno.writeFile(join(whisperSrc, "ggml-small-test.bin"), randomFile(60_000));
  await Deno.writeTextFile(join(whisperSrc, "README.md"), "# whisper.cpp models\n");
  const hub: FakeHub = await startFakeHub({
    [EMBED]: { dir: EMBED_SRC, pipelineTag: "feature-extraction" },
    [WHISPER]: { dir: whisperSrc, pipelineTag: "automatic-speech-recognition" },
    [GGUF_REPO]: { dir: join(MODELS_DIR, "generated", "chat-tiny", "gguf"), pipelineTag: "text-generation" },
    "test-org/evil": {
      dir: EMBED_SRC,
      pipelineTag: "feature-extraction",
      extraSiblings: [{ rfilename: "../../../../escaped.json", size: 2, blobId: "0".repeat(40) }],
    },
  }, { token: "hf_e2e_token" });

  const cli = async (dir: string, ...args: string[]): Promise<Run> => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "main.ts",
        ...args,
        `--models-dir=${dir}`,
        `--manifest=${join(dir, "manifest.json")}`,
      ],
      cwd: REPO_ROOT,
      env: { HF_ENDPOINT: hub.url, HF_TOKEN: "hf_e2e_token", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  };
  const show = (r: Run) => `code ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  const readManifest = async (dir: string) => JSON.parse(await Deno.readTextFile(join(dir, "manifest.json")));
  const fileRequests = () => hub.requests.filter((r) => r.server === "cdn" || r.path.includes("/resolve/"));
  const embedFiles = [...Deno.readDirSync(EMBED_SRC)].length; // sanity: the source is there

  const main = join(tmp, "models");
  const embedDir = join(main, "hub", "test-org", "embed-tiny");
  try {
    assert.ok(embedFiles > 0);

    await t.step("pull a transformers.js repo: files, hashes, manifest entry and default", async () => {
      const r = await cli(main, "pull", EMBED);
      assert.equal(r.code, 0, show(r));
      assert.match(
        r.stdout,
        /^pulled test-org\/embed-tiny@[0-9a-f]{12} as "embed-tiny" \(embedding, dtype fp32\): \d+ files/m,
      );
      assert.match(r.stdout, /added "embed-tiny", now the default embedding model/);
      // stderr is not a terminal here: one plain line per file, no bar drawing.
      assert.ok(!r.stderr.includes("\x1b["), "no escape sequences");
      for (const f of ["config.json", "tokenizer.json", "onnx/model.onnx", "1_Pooling/config.json"]) {
        const got = await Deno.readFile(join(embedDir, f));
        assert.equal(sha256(got), sha256(await Deno.readFile(join(EMBED_SRC, f))), f);
        assert.match(r.stderr, new RegExp(`^${f.replace(/\./g, "\\.")}  .* downloaded in`, "m"));
      }
      // Only the fp32 weights.
      assert.equal(await exists(join(embedDir, "onnx", "model_quantized.onnx")), false);
      assert.equal(await exists(join(embedDir, ".generated")), false);
      const m = await readManifest(main);
      assert.deepEqual(m.defaults, { embedding: "embed-tiny" });
      assert.equal(m.models["embed-tiny"].task, "embedding");
      assert.equal(m.models["embed-tiny"].repo, EMBED);
      assert.equal(m.models["embed-tiny"].dtype, "fp32");
      // The token goes to the hub, never to the CDN that serves the LFS files.
      assert.ok(hub.requests.some((q) => q.server === "hub" && q.authorization === "Bearer hf_e2e_token"));
      assert.ok(hub.requests.some((q) => q.server === "cdn"));
      assert.ok(hub.requests.filter((q) => q.server === "cdn").every((q) => q.authorization === null));
    });

    await t.step("pull again by model id: everything verified in place, nothing downloaded", async () => {
      const before = fileRequests().length;
      const r = await cli(main, "pull", "embed-tiny");
      assert.equal(r.code, 0, show(r));
      assert.match(r.stdout, /\(\d+ already there\)/);
      assert.match(r.stdout, /updated "embed-tiny"$/m);
      assert.equal(fileRequests().length, before);
    });

    await t.step("a dtype the repo lacks fails before writing, listing what it has", async () => {
      const r = await cli(main, "pull", "embed-tiny", "--dtype", "bnb4");
      assert.equal(r.code, 1, show(r));
      assert.match(r.stderr, /^error: test-org\/embed-tiny has no bnb4 weights; available: fp32/m);
      assert.equal((await readManifest(main)).models["embed-tiny"].dtype, "fp32");
    });

    await t.step("a cut download keeps its part; the next pull resumes it with Range", async () => {
      const dir = join(tmp, "resume");
      const size = (await Deno.stat(join(EMBED_SRC, "onnx", "model.onnx"))).size;
      const cutAt = Math.floor(size / 2);
      hub.cut("onnx/model.onnx", cutAt);
      const r1 = await cli(dir, "pull", EMBED, "--retries=0");
      assert.equal(r1.code, 1, show(r1));
      const lastLine = r1.stderr.trim().split("\n").at(-1)!;
      assert.match(
        lastLine,
        new RegExp(
          `^error: onnx/model\\.onnx: download interrupted at ${cutAt} of ${size} bytes.*run the same pull again to resume$`,
        ),
      );
      const part = join(dir, "hub", "test-org", "embed-tiny", "onnx", "model.onnx.part");
      assert.equal((await Deno.stat(part)).size, cutAt);
      assert.equal(await exists(join(dir, "manifest.json")), false, "no manifest entry for a failed pull");

      const r2 = await cli(dir, "pull", EMBED);
      assert.equal(r2.code, 0, show(r2));
      const resumed = hub.requests.filter((q) => q.server === "cdn").at(-1)!;
      assert.equal(resumed.range, `bytes=${cutAt}-`);
      assert.equal(resumed.status, 206);
      assert.match(r2.stderr, /^onnx\/model\.onnx .* resumed in/m);
      assert.match(r2.stdout, /1 resumed/);
      assert.equal(await exists(part), false);
      assert.equal(
        sha256(await Deno.readFile(join(dir, "hub", "test-org", "embed-tiny", "onnx", "model.onnx"))),
        sha256(await Deno.readFile(join(EMBED_SRC, "onnx", "model.onnx"))),
      );
      assert.equal((await readManifest(dir)).models["embed-tiny"].repo, EMBED);
    });

    await t.step("Ctrl-C stops a pull cleanly (exit 130) and keeps the part for the next one", async () => {
      const dir = join(tmp, "sigint");
      const part = join(dir, "hub", "test-org", "embed-tiny", "onnx", "model.onnx.part");
      hub.slow("onnx/model.onnx", 50_000);
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "main.ts",
          "pull",
          EMBED,
          `--models-dir=${dir}`,
          `--manifest=${join(dir, "manifest.json")}`,
        ],
        cwd: REPO_ROOT,
        env: { HF_ENDPOINT: hub.url, HF_TOKEN: "hf_e2e_token" },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      try {
        const deadline = Date.now() + 30_000;
        while (((await Deno.stat(part).catch(() => null))?.size ?? 0) === 0) {
          assert.ok(Date.now() < deadline, "the download never started");
          await new Promise((r) => setTimeout(r, 50));
        }
        child.kill("SIGINT");
        const out = await child.output();
        const stderr = new TextDecoder().decode(out.stderr);
        assert.equal(out.code, 130, stderr);
        assert.match(
          stderr.trim().split("\n").at(-1)!,
          /^error: onnx\/model\.onnx: interrupted; run the same pull again to resume$/,
        );
        const kept = (await Deno.stat(part)).size;
        assert.ok(kept > 0 && kept < (await Deno.stat(join(EMBED_SRC, "onnx", "model.onnx"))).size);
        assert.equal(await exists(join(dir, "manifest.json")), false);
        hub.slow("onnx/model.onnx", 0);
        const r = await cli(dir, "pull", EMBED);
        assert.equal(r.code, 0, show(r));
        assert.equal(hub.requests.filter((q) => q.server === "cdn").at(-1)!.range, `bytes=${kept}-`);
      } finally {
        hub.slow("onnx/model.onnx", 0);
        await child.status.catch(() => {});
      }
    });

    await t.step("within one pull, a cut connection is retried from where it stopped", async () => {
      const dir = join(tmp, "retry");
      hub.cut("onnx/model.onnx", 4096, 2);
      const r = await cli(dir, "pull", EMBED);
      assert.equal(r.code, 0, show(r));
      assert.match(r.stderr, /^retry 1: onnx\/model\.onnx: download interrupted at 4096/m);
      assert.match(r.stderr, /^retry 2: onnx\/model\.onnx: download interrupted at 8192/m);
      assert.deepEqual(hub.requests.filter((q) => q.server === "cdn").slice(-3).map((q) => q.range), [
        null,
        "bytes=4096-",
        "bytes=8192-",
      ]);
    });

    await t.step("a corrupted file fails the sha256 check and is deleted", async () => {
      const dir = join(tmp, "corrupt");
      hub.corrupt("onnx/model.onnx");
      try {
        const r = await cli(dir, "pull", EMBED);
        assert.equal(r.code, 1, show(r));
        assert.match(
          r.stderr.trim().split("\n").at(-1)!,
          /^error: onnx\/model\.onnx: sha256 mismatch \(expected [0-9a-f]{64}, got [0-9a-f]{64}\); the download was deleted$/,
        );
        const onnx = join(dir, "hub", "test-org", "embed-tiny", "onnx");
        assert.deepEqual([...Deno.readDirSync(onnx)], []);
        assert.equal(await exists(join(dir, "manifest.json")), false);
      } finally {
        hub.corrupt("onnx/model.onnx", false);
      }
    });

    await t.step("a listing with an escaping file name is refused and nothing is written", async () => {
      const dir = join(tmp, "evil");
      const r = await cli(dir, "pull", "test-org/evil");
      assert.equal(r.code, 1, show(r));
      assert.match(r.stderr, /^error: unsafe file name from the hub "..\/..\/..\/..\/escaped.json"/m);
      assert.equal(await exists(dir), false);
      assert.equal(await exists(join(tmp, "escaped.json")), false);
      assert.equal(await exists(join(tmp, "..", "escaped.json")), false);
    });

    await t.step("whisper.cpp repos: one ggml file, chosen with --file", async () => {
      const r1 = await cli(main, "pull", WHISPER);
      assert.equal(r1.code, 1, show(r1));
      assert.match(
        r1.stderr,
        /has 2 ggml files: choose one with --file \(ggml-small-test\.bin, ggml-tiny-test\.bin\)/,
      );
      const r2 = await cli(main, "pull", WHISPER, "--file", "ggml-tiny-test.bin");
      assert.equal(r2.code, 0, show(r2));
      assert.match(r2.stdout, /as "whisper-tiny-test" \(transcription, ggml-tiny-test\.bin\): 1 files/);
      const whisperDir = join(main, "hub", "test-org", "whisper-fake");
      assert.deepEqual([...Deno.readDirSync(whisperDir)].map((e) => e.name), ["ggml-tiny-test.bin"]);
      const m = await readManifest(main);
      assert.deepEqual(m.models["whisper-tiny-test"].options, { file: "ggml-tiny-test.bin" });
      assert.equal(m.defaults.transcription, "whisper-tiny-test");
      assert.equal(m.defaults.embedding, "embed-tiny", "other entries and defaults are kept");
    });

    await t.step("list: task, source, presence and size on disk", async () => {
      // A model that was never pulled, and one whose download is unfinished.
      const m = await readManifest(main);
      m.models.ghost = { task: "chat", repo: "nobody/ghost", dtype: "q4" };
      m.models["half-whisper"] = {
        task: "transcription",
        repo: WHISPER,
        options: { file: "ggml-small-test.bin" },
      };
      await Deno.writeTextFile(join(main, "manifest.json"), JSON.stringify(m, null, 2));
      await Deno.writeFile(
        join(main, "hub", "test-org", "whisper-fake", "ggml-small-test.bin.part"),
        new Uint8Array(10),
      );

      const r = await cli(main, "list");
      assert.equal(r.code, 0, show(r));
      const rows = Object.fromEntries(
        r.stdout.trim().split("\n").slice(1, -2).map((l) => l.split(/\s{2,}/)).map((c) => [c[0], c]),
      );
      assert.deepEqual(Object.keys(rows).sort(), [
        "embed-tiny *",
        "ghost",
        "half-whisper",
        "whisper-tiny-test *",
      ]);
      assert.deepEqual(rows["embed-tiny *"].slice(1, 4), ["embedding", `${EMBED} (fp32)`, "yes"]);
      assert.deepEqual(rows["whisper-tiny-test *"].slice(1, 5), [
        "transcription",
        `${WHISPER} ggml-tiny-test.bin`,
        "yes",
        "150 kB",
      ]);
      assert.deepEqual(rows.ghost.slice(1, 5), ["chat", "nobody/ghost (q4)", "no", "-"]);
      assert.equal(rows["half-whisper"][3], "partial");
      assert.match(r.stdout, /^4 models, .* on disk; \* = default for its task$/m);

      const j = await cli(main, "list", "--json");
      assert.equal(j.code, 0, show(j));
      const json = JSON.parse(j.stdout) as { id: string; local: string; bytes: number }[];
      const embed = json.find((x) => x.id === "embed-tiny")!;
      let onDisk = 0;
      const walk = (d: string) => {
        for (const e of Deno.readDirSync(d)) {
          if (e.isDirectory) walk(join(d, e.name));
          else onDisk += Deno.statSync(join(d, e.name)).size;
        }
      };
      walk(embedDir);
      assert.equal(embed.bytes, onDisk);
    });

    await t.step("usage and hub errors: one line, non-zero exit", async () => {
      const cases: [string[], number, RegExp][] = [
        [["pull"], 2, /^error: pull takes one repo or model id/],
        [["pull", "not a repo"], 2, /^error: "not a repo" is neither a model id in .* nor a hub repo/],
        [
          ["pull", "ghost-org/missing"],
          1,
          /^error: ghost-org\/missing not found on the hub, or private \(set HF_TOKEN\)/,
        ],
        [
          ["pull", EMBED, "--task", "dance"],
          2,
          /^error: --task: expected one of chat, embedding, transcription/,
        ],
        [
          ["pull", EMBED, "--as", "whisper-tiny-test"],
          2,
          /^error: model id "whisper-tiny-test" already names test-org\/whisper-fake/,
        ],
      ];
      for (const [args, code, re] of cases) {
        const r = await cli(main, ...args);
        assert.equal(r.code, code, `${args.join(" ")}: ${show(r)}`);
        assert.equal(r.stderr.trim().split("\n").length, 1, `${args.join(" ")}: one line\n${r.stderr}`);
        assert.match(r.stderr, re);
      }
    });

    await t.step("the server lists the pulled models and serves the pulled embedding model", async () => {
      const manifest = (await readManifest(main)) as ManifestJson;
      const server = await startTestServer({ manifest, flags: [`--models-dir=${main}`] });
      try {
        const ids = (await server.client.models.list()).data.map((m) => m.id).sort();
        assert.deepEqual(ids, ["embed-tiny", "ghost", "half-whisper", "whisper-tiny-test"]);
        const res = await server.client.embeddings.create({
          model: "embed-tiny",
          input: "pulled from the hub",
        });
        const v = res.data[0].embedding;
        const hidden = JSON.parse(await Deno.readTextFile(join(embedDir, "config.json"))).hidden_size;
        assert.equal(v.length, hidden);
        assert.ok(
          Math.abs(Math.hypot(...v) - 1) < 1e-3,
          "normalized like its sentence-transformers config says",
        );
      } finally {
        await server.close();
      }
    });

    await t.step(
      "GGUF repos: one .gguf file (the preferred quant), listed, then served by llama.cpp",
      async () => {
        const r = await cli(main, "pull", GGUF_REPO);
        assert.equal(r.code, 0, show(r));
        const dir = join(main, "hub", "test-org", "chat-tiny-GGUF");
        assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["chat-tiny-Q8_0.gguf"]);
        const src = await Deno.readFile(
          join(MODELS_DIR, "generated", "chat-tiny", "gguf", "chat-tiny-Q8_0.gguf"),
        );
        assert.equal(sha256(await Deno.readFile(join(dir, "chat-tiny-Q8_0.gguf"))), sha256(src));
        const m = await readManifest(main);
        assert.deepEqual(m.models["chat-tiny-q8_0"].options, { file: "chat-tiny-Q8_0.gguf" });
        assert.equal(m.models["chat-tiny-q8_0"].task, "chat");
        const list = await cli(main, "list");
        assert.match(list.stdout, /chat-tiny-q8_0 .*chat-tiny-Q8_0\.gguf/);
        const server = await startTestServer({
          manifest: m as ManifestJson,
          flags: [`--models-dir=${main}`],
        });
        try {
          const reply = await server.client.chat.completions.create({
            model: "chat-tiny-q8_0",
            messages: [{ role: "user", content: "Hi there!" }],
          });
          assert.equal(reply.choices[0].message.content, "Hello from chat-tiny!");
        } finally {
          await server.close();
        }
      },
    );
  } finally {
    await hub.close();
    await Deno.remove(tmp, { recursive: true });
  }
});
