import assert from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../config.ts";
import { formatTable, listRows } from "./list.ts";

Deno.test("cli list: presence follows the files each kind of model needs", async () => {
  const models = await Deno.makeTempDir();
  try {
    const put = async (rel: string, bytes: number) => {
      await Deno.mkdir(join(models, rel, ".."), { recursive: true });
      await Deno.writeFile(join(models, rel), new Uint8Array(bytes));
    };
    // Complete q4 chat model (an fp32 file of another dtype does not count for it).
    await put("hub/o/chat/config.json", 10);
    await put("hub/o/chat/tokenizer.json", 20);
    await put("hub/o/chat/onnx/model_q4.onnx", 1000);
    // Same files but the entry asks for fp16: partial.
    // Interrupted embedding download: partial.
    await put("hub/o/emb/config.json", 10);
    await put("hub/o/emb/tokenizer.json", 10);
    await put("hub/o/emb/onnx/model.onnx.part", 500);
    // Local whisper file by options.file; and a local folder with no ggml file named.
    await put("local/w/ggml-tiny.bin", 2000);
    await put("local/w2/ggml-x.bin", 3000);
    await Deno.writeTextFile(
      join(models, "manifest.json"),
      JSON.stringify({
        defaults: { chat: "chat" },
        aliases: { "gpt-4o": "@chat" },
        models: {
          chat: { task: "chat", repo: "o/chat", dtype: "q4" },
          "chat-fp16": { task: "chat", repo: "o/chat", dtype: "fp16" },
          emb: { task: "embedding", repo: "o/emb" },
          w: { task: "transcription", path: "local/w", options: { file: "ggml-tiny.bin" } },
          w2: { task: "transcription", path: "local/w2" },
          wmissing: { task: "transcription", path: "local/w", options: { file: "ggml-large.bin" } },
          gone: { task: "embedding", repo: "o/gone" },
        },
      }),
    );
    const { config } = parseConfig([`--models-dir=${models}`], {}, models);
    const rows = Object.fromEntries((await listRows(config!)).map((r) => [r.id, r]));
    assert.deepEqual(
      Object.fromEntries(Object.entries(rows).map(([id, r]) => [id, [r.local, r.bytes]])),
      {
        chat: ["yes", 1030],
        "chat-fp16": ["partial", 1030],
        emb: ["partial", 520],
        w: ["yes", 2000],
        w2: ["yes", 3000],
        wmissing: ["no", 0],
        gone: ["no", 0],
      },
    );
    assert.equal(rows.chat.isDefault, true);
    assert.deepEqual(rows.chat.aliases, ["gpt-4o"]);
    assert.equal(rows.w.source, join("local", "w"));
    assert.equal(rows.w2.file, "ggml-x.bin");

    const table = formatTable(Object.values(rows));
    assert.match(table[0], /^ID\s+TASK\s+SOURCE\s+LOCAL\s+SIZE$/);
    assert.match(table[1], /^chat \*\s+chat\s+o\/chat \(q4\)\s+yes\s+1\.03 kB$/);
    assert.match(table.join("\n"), /^gone\s+embedding\s+o\/gone\s+no\s+-$/m);
    // The two entries of o/chat share a folder: counted once.
    assert.equal(table.at(-1), "7 models, 6.55 kB on disk; * = default for its task");
  } finally {
    await Deno.remove(models, { recursive: true });
  }
});
