// The single binary: `deno task compile` output, with the whisper library in lib/ beside it, starts, serves
// /v1/models and answers a chat, an embeddings and a transcription request on the generated models.
// `deno compile` needs Deno's `denort` runtime (downloaded from dl.deno.land, or DENORT_BIN); where it cannot be
// had, this test is skipped and says why.
import assert from "node:assert/strict";
import { join } from "node:path";
import { GENERATED_MODELS, MODELS_DIR, REPO_ROOT, SHARED_DIR } from "../helpers.ts";

async function canCompile(): Promise<string | undefined> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "probe.ts"), "console.log(1)");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["compile", "--output", join(dir, "probe"), join(dir, "probe.ts")],
      stdout: "null",
      stderr: "piped",
      env: { NO_COLOR: "1" },
      signal: AbortSignal.timeout(60_000),
    }).output();
    if (out.success) return undefined;
    const lines = new TextDecoder().decode(out.stderr).split("\n");
    return lines.find((l) => /error sending request/.test(l))?.trim() ??
      lines.find((l) => /error/i.test(l)) ?? "deno compile failed";
  } catch (e) {
    return String(e);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const why = await canCompile();
if (why) console.error(`compile test skipped: deno compile cannot run here (${why.trim()})`);

Deno.test(
  { name: "compile: the single binary serves every endpoint", ignore: why !== undefined },
  async () => {
    const dir = await Deno.makeTempDir();
    const binary = join(dir, "openai-local");
    const task = JSON.parse(await Deno.readTextFile(join(REPO_ROOT, "deno.json"))).tasks.compile as string;
    const args = task.replace(/^deno /, "").replace(/--output \S+/, `--output ${binary}`).split(" ");
    const built = await new Deno.Command(Deno.execPath(), { args, cwd: REPO_ROOT }).output();
    assert.ok(built.success, new TextDecoder().decode(built.stderr));
    // The whisper library ships beside the binary.
    await Deno.mkdir(join(dir, "lib"));
    for await (const e of Deno.readDir(join(REPO_ROOT, "native", "build", "lib"))) {
      await Deno.copyFile(join(REPO_ROOT, "native", "build", "lib", e.name), join(dir, "lib", e.name));
    }
    const manifest = join(dir, "manifest.json");
    await Deno.writeTextFile(manifest, JSON.stringify(GENERATED_MODELS));
    const child = new Deno.Command(binary, {
      args: [
        "--port=0",
        `--models-dir=${MODELS_DIR}`,
        `--manifest=${manifest}`,
        "--offline",
        "--log-format=json",
      ],
      cwd: dir,
      stderr: "piped",
      stdout: "null",
    }).spawn();
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let log = "";
    let url = "";
    while (!url) {
      const { value, done } = await reader.read();
      assert.ok(!done, log);
      log += value;
      url = /"url":"(http:\/\/[^"]+)"/.exec(log)?.[1] ?? "";
    }
    const drain = (async () => {
      while (!(await reader.read()).done);
    })();
    try {
      const models = await (await fetch(`${url}/v1/models`)).json();
      assert.equal(models.data.length, 3);
      const post = (path: string, body: unknown) =>
        fetch(`${url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const chat = await (await post("/v1/chat/completions", {
        model: "chat-tiny",
        messages: [{ role: "user", content: "Hi there!" }],
      })).json();
      assert.equal(chat.choices[0].message.content, "Hello from chat-tiny!");
      const emb = await (await post("/v1/embeddings", { model: "embed-tiny", input: "x" })).json();
      assert.equal(emb.data.length, 1);
      const form = new FormData();
      form.set(
        "file",
        new Blob([await Deno.readFile(join(SHARED_DIR, "data", "whisper", "jfk.wav"))]),
        "jfk.wav",
      );
      form.set("model", "whisper-1");
      const stt = await fetch(`${url}/v1/audio/transcriptions`, { method: "POST", body: form });
      assert.equal(stt.status, 200, await stt.clone().text());
      assert.equal(typeof (await stt.json()).text, "string");
    } finally {
      child.kill("SIGTERM");
      assert.equal((await child.status).code, 0);
      await drain;
      await Deno.remove(dir, { recursive: true });
    }
  },
);
