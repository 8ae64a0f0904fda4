import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { blockCount, readGgufMeta } from "./gguf_meta.ts";

const CHAT = fileURLToPath(
  new URL("../../../models/generated/chat-tiny/gguf/chat-tiny-F32.gguf", import.meta.url),
);

Deno.test("gguf meta: a generated model's architecture and layers, without reading its tensors", () => {
  const meta = readGgufMeta(CHAT);
  assert.equal(meta.get("general.architecture"), "qwen2");
  assert.equal(blockCount(meta), 2);
  assert.equal(typeof meta.get("tokenizer.chat_template"), "string");
  assert.equal(meta.get("tokenizer.ggml.tokens"), undefined, "arrays are skipped");
});

Deno.test("gguf meta: a truncated or foreign file gives what could be read, never an exception", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const bytes = Deno.readFileSync(CHAT);
    Deno.writeFileSync(`${dir}/cut.gguf`, bytes.subarray(0, 200));
    const cut = readGgufMeta(`${dir}/cut.gguf`);
    assert.equal(cut.get("general.architecture"), "qwen2");
    assert.equal(blockCount(cut), 0);
    Deno.writeTextFileSync(`${dir}/text.gguf`, "not a model");
    assert.equal(readGgufMeta(`${dir}/text.gguf`).size, 0);
    assert.equal(readGgufMeta(`${dir}/absent.gguf`).size, 0);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
