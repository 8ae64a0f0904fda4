import assert from "node:assert/strict";
import { UTF8_STATES } from "./recognizer.ts";
import { prng } from "../../../tests/support/synthetic_vocab.ts";
import { TokenTrie, VocabIndex } from "./vocab.ts";

Deno.test("vocab: the trie holds every token under its bytes, one node per distinct prefix", () => {
  const rand = prng(1);
  const tokens: (Uint8Array | null)[] = [null];
  for (let i = 0; i < 3000; i++) {
    const len = 1 + Math.floor(rand() * 6);
    tokens.push(
      new Uint8Array(
        Array.from({ length: len }, () => [0x22, 0x61, 0x62, 0xc3, 0xa9, 0x0a][Math.floor(rand() * 6)]),
      ),
    );
  }
  tokens.push(new Uint8Array([0x61])); // the same bytes as another id
  const ids = tokens.flatMap((t, id) => t ? [id] : []);
  const trie = TokenTrie.build(ids, tokens);
  const prefixes = new Set<string>();
  for (const id of ids) {
    for (let i = 1; i <= tokens[id]!.length; i++) prefixes.add(tokens[id]!.slice(0, i).join(","));
  }
  assert.equal(trie.nodes, prefixes.size + 1);
  for (const id of ids) {
    let node = 0;
    for (const b of tokens[id]!) {
      let next = -1;
      for (let e = trie.edgeStart[node]; e < trie.edgeStart[node] + trie.edgeCount[node]; e++) {
        if (trie.edgeByte[e] === b) next = trie.edgeChild[e];
      }
      assert.ok(next > 0);
      node = next;
    }
    const here = trie.tokIds.slice(trie.tokStart[node], trie.tokStart[node] + trie.tokCount[node]);
    assert.ok(here.includes(id));
  }
});

/** A byte sequence that leaves a UTF-8 decoder in recognizer state u (see recognizer.ts). */
const LEADS = [[], [0xc3], [0xe4], [0xf1], [0xe0], [0xed], [0xf0], [0xf4]];

Deno.test("vocab: plain-string masks agree with a streaming UTF-8 decoder", () => {
  const rand = prng(2);
  const tokens: Uint8Array[] = [];
  for (let i = 0; i < 4000; i++) {
    const len = 1 + Math.floor(rand() * 4);
    tokens.push(new Uint8Array(Array.from({ length: len }, () => Math.floor(rand() * 256))));
  }
  const ix = VocabIndex.build(tokens, []);
  assert.equal(LEADS.length, UTF8_STATES);
  for (let id = 0; id < tokens.length; id++) {
    const t = tokens[id];
    const special = t.some((b) => b === 0x22 || b === 0x5c || b < 0x20);
    for (let u = 0; u < UTF8_STATES; u++) {
      let valid = true;
      try {
        new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([...LEADS[u], ...t]), {
          stream: true,
        });
      } catch {
        valid = false;
      }
      const inMask = (ix.plain[u][id >>> 5] & (1 << (id & 31))) !== 0;
      assert.equal(inMask, valid && !special, `token ${t} state ${u}`);
    }
  }
  assert.equal(
    ix.stats.specialTokens,
    tokens.filter((t) => t.some((b) => b === 0x22 || b === 0x5c || b < 0x20)).length,
  );
});

Deno.test("vocab: built once per key; EOS and byte-less ids are kept out of the tries", () => {
  let builds = 0;
  const key = {};
  const make = () => {
    builds++;
    return { tokens: [new Uint8Array([0x7b]), null, new Uint8Array([0x7d]), new Uint8Array()], eos: [2, 99] };
  };
  const a = VocabIndex.cached(key, make), b = VocabIndex.cached(key, make);
  assert.equal(a, b);
  assert.equal(builds, 1);
  assert.deepEqual(a.eos, [2]);
  assert.equal(a.stats.usable, 1);
  assert.notEqual(VocabIndex.cached({}, make), a);
});
