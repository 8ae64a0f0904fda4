import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseToolCalls } from "../tools/tool_parser.ts";
import { maskIds } from "./matcher.ts";
import { prng } from "../../../tests/support/synthetic_vocab.ts";
import { byteLevelBytes, sentencePieceBytes, tokenBytesFromTokenizerJson } from "./token_bytes.ts";
import { toolCallGrammar } from "./tool_grammar.ts";
import { VocabIndex } from "./vocab.ts";

const dec = (b: Uint8Array | null) => b === null ? null : new TextDecoder().decode(b);

Deno.test("token bytes: byte-level and SentencePiece spellings", () => {
  assert.equal(dec(byteLevelBytes("Ġhello")), " hello");
  assert.equal(dec(byteLevelBytes("ĊĊ")), "\n\n");
  assert.equal(dec(byteLevelBytes("Ã©")), "é");
  assert.deepEqual(byteLevelBytes("ä¸"), new Uint8Array([0xe4, 0xb8])); // half of 中
  assert.equal(byteLevelBytes("中"), null);
  assert.equal(dec(sentencePieceBytes("▁the")), " the");
  assert.deepEqual(sentencePieceBytes("<0x0A>"), new Uint8Array([10]));
  const json = {
    model: { type: "BPE", vocab: { "{": 0, 'Ġ"': 1, "Ċ": 2 } },
    decoder: { type: "Sequence", decoders: [{ type: "ByteLevel" }] },
    added_tokens: [
      { id: 3, content: "<|im_end|>", special: true },
      { id: 5, content: "<tool_call>", special: false },
    ],
  };
  assert.deepEqual(tokenBytesFromTokenizerJson(json).map(dec), ["{", ' "', "\n", null, null, "<tool_call>"]);
  assert.throws(() => tokenBytesFromTokenizerJson({ model: { type: "WordPiece", vocab: {} } }));
});

const CHAT_TINY = fileURLToPath(new URL("../../../models/generated/chat-tiny/", import.meta.url));

Deno.test({
  name: "token bytes: a real tokenizer (generated chat-tiny): bytes decode like the tokenizer, calls parse",
  ignore: !existsSync(CHAT_TINY + ".generated"),
  async fn() {
    const { AutoTokenizer, env } = await import("@huggingface/transformers");
    env.allowRemoteModels = false;
    env.localModelPath = fileURLToPath(new URL("../../../models/generated/", import.meta.url));
    const tok = await AutoTokenizer.from_pretrained("chat-tiny");
    const json = (tok as unknown as { _tokenizerJSON: Parameters<typeof tokenBytesFromTokenizerJson>[0] })
      ._tokenizerJSON;
    const bytes = tokenBytesFromTokenizerJson(json);
    for (let id = 0; id < bytes.length; id++) {
      const text = tok.decode([id], { skip_special_tokens: true });
      if (bytes[id] === null) assert.equal(text, "", `id ${id} is special`);
      else if (!text.includes("\ufffd")) assert.equal(dec(bytes[id]), text, `id ${id}`);
    }
    const eos = [tok.eos_token_id as number];
    const ix = VocabIndex.cached(tok, () => ({ tokens: bytes, eos }));
    const g = toolCallGrammar([{
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    }]);
    const rand = prng(1);
    for (let run = 0; run < 5; run++) {
      const m = g.matcher(ix);
      const ids: number[] = [];
      for (let step = 0; step < 400 && !m.finished; step++) {
        const allowed = maskIds(m.mask());
        const c = m.completion();
        // Random tokens for a while, then the shortest completion spelled with whatever token starts it.
        let id = allowed[Math.floor(rand() * allowed.length)];
        if (step > 40) {
          id = c.length === 0
            ? eos[0]
            : allowed.find((i) => bytes[i]?.[0] === c[0] && bytes[i]!.length === 1) ?? id;
        }
        assert.ok(m.accept(id));
        ids.push(id);
      }
      assert.ok(m.finished);
      // The engine decodes with the tokenizer; that text must be what the grammar saw.
      const text = tok.decode(ids, { skip_special_tokens: true });
      const r = parseToolCalls(text);
      assert.equal(r.calls.length, 1, text);
      assert.equal(r.calls[0].name, "get_weather");
      assert.equal(typeof JSON.parse(r.calls[0].arguments).city, "string");
    }
  },
});
