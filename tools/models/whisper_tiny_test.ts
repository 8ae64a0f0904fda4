import assert from "node:assert/strict";
import { join } from "node:path";
import {
  benchHparams,
  chainOf,
  EN,
  generate,
  languageToken,
  MODEL_FILE,
  MULTI,
  parseHeader,
  readHeader,
  scriptTokens,
  TEST_SCRIPT,
  timestampToken,
  tokenize,
  VERSION,
} from "./whisper_tiny.ts";

/** Walks the tensor records after the header: name -> [type, ne]. */
function tensorsOf(bytes: Uint8Array, headerLength: number): Map<string, [number, number[]]> {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Map<string, [number, number[]]>();
  for (let o = headerLength; o < bytes.length;) {
    const nDims = dv.getInt32(o, true), nameLen = dv.getInt32(o + 4, true), type = dv.getInt32(o + 8, true);
    const ne = Array.from({ length: nDims }, (_, i) => dv.getInt32(o + 12 + 4 * i, true));
    o += 12 + 4 * nDims;
    const name = new TextDecoder().decode(bytes.subarray(o, o + nameLen));
    o += nameLen + ne.reduce((a, b) => a * b, 1) * (type === 0 ? 4 : 2);
    out.set(name, [type, ne]);
  }
  return out;
}

Deno.test("whisper_tiny: the header is the real tiny.en one; scripts tokenize to unique tokens", async () => {
  const h = await readHeader();
  assert.equal(h.hparams.nVocab, 51864);
  assert.equal(h.hparams.nAudioState, 384);
  assert.equal(h.hparams.nAudioLayer, 4);
  assert.equal(h.hparams.ftype, 1);
  assert.equal(h.vocab.length, 50257);
  assert.equal(new TextDecoder().decode(h.vocab[EN.eot]), "<|endoftext|>");
  assert.deepEqual(tokenize(h.vocab, " The quick"), [383, 2068]);
  const seq = scriptTokens(h.vocab, TEST_SCRIPT);
  assert.equal(seq[0], timestampToken(0));
  assert.equal(seq.at(-1), EN.eot);
  assert.equal(timestampToken(1.2), EN.beg + 60);
  assert.throws(() => timestampToken(0.01), /multiple of 20 ms/);
  assert.throws(() => scriptTokens(h.vocab, [{ t0: 0, t1: 1, text: " the the" }]), /unique/);
  assert.deepEqual(benchHparams("base.en", h.hparams).nAudioState, 512);
  // Multilingual ids sit one higher; the languages come right after <|startoftranscript|>.
  assert.deepEqual([MULTI.eot, MULTI.sot, MULTI.translate, MULTI.transcribe, MULTI.beg], [
    50257,
    50258,
    50358,
    50359,
    50364,
  ]);
  assert.equal(languageToken(2), 50261); // <|de|>
  assert.equal(timestampToken(0.02, MULTI), 50365);
  assert.deepEqual(chainOf(7, [8, 9], "task"), [{ from: 7, to: 8, at: "task" }, { from: 8, to: 9 }]);
  assert.equal(benchHparams("base.en", h.hparams).nTextLayer, 6);
});

Deno.test("whisper_tiny: generate() writes every tensor the loader expects, deterministically", async () => {
  const [a, b] = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  try {
    await generate(a);
    await generate(b);
    const bytes = await Deno.readFile(join(a, MODEL_FILE));
    const h = parseHeader(bytes);
    const headerLength = 48 + h.filters.length + 4 + h.vocab.reduce((n, w) => n + 4 + w.length, 0);
    const tensors = tensorsOf(bytes, headerLength);
    // 7 encoder globals + 15 per encoder layer, 4 decoder globals + 24 per decoder layer (whisper.cpp's count).
    assert.equal(tensors.size, 7 + 15 * 4 + 4 + 24 * 4);
    assert.deepEqual(tensors.get("encoder.conv1.weight"), [1, [3, 80, 384]]);
    assert.deepEqual(tensors.get("encoder.conv1.bias"), [0, [1, 384]]);
    assert.deepEqual(tensors.get("encoder.positional_embedding"), [0, [384, 1500]]);
    assert.deepEqual(tensors.get("decoder.token_embedding.weight"), [1, [384, 51864]]);
    assert.deepEqual(tensors.get("decoder.blocks.3.cross_attn.key.weight"), [1, [384, 384]]);
    assert.deepEqual(tensors.get("decoder.blocks.0.mlp.0.weight"), [1, [384, 1536]]);
    assert.deepEqual(tensors.get("encoder.blocks.2.mlp_ln.bias"), [0, [384]]);
    const same = await Deno.readFile(join(b, MODEL_FILE));
    const hash = async (x: Uint8Array<ArrayBuffer>) =>
      new Uint8Array(await crypto.subtle.digest("SHA-256", x));
    assert.deepEqual(await hash(bytes), await hash(same));
    assert.match(VERSION, /^whisper-tiny-test-\d+$/);
  } finally {
    await Deno.remove(a, { recursive: true });
    await Deno.remove(b, { recursive: true });
  }
});

Deno.test("whisper_multi: the multilingual header, three scripts with no token in common", async () => {
  const { MULTI_HEADER_PATH, GERMAN_SCRIPT, PROMPTED_SCRIPT, ENGLISH_SCRIPT } = await import(
    "./whisper_multi.ts"
  );
  const h = await readHeader(MULTI_HEADER_PATH);
  assert.equal(h.hparams.nVocab, 51865);
  const all = [GERMAN_SCRIPT, PROMPTED_SCRIPT, ENGLISH_SCRIPT].map((s) => scriptTokens(h.vocab, s, MULTI));
  const sources = all.flatMap((seq) => seq.slice(0, -1));
  assert.equal(new Set(sources).size, sources.length, "each token leads to one successor");
  assert.ok(all.every((seq) => seq.at(-1) === MULTI.eot));
});
