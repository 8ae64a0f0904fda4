// Tests streaming text: the incremental decoder never emits half a UTF-8 character and its pieces always add
// up to the full decode; the stop filter never emits a stop sequence or any part of one and returns exactly the
// text before the first one, however the text is chunked; token bytes for logprobs.
import assert from "node:assert/strict";
import fc from "fast-check";
import { IncrementalDecoder, StopFilter } from "./text.ts";

/** A fake byte-level tokenizer: token i is the single byte i (ids >= 256 are "special", decoded to ""). */
const lenient = new TextDecoder();
const byteDecode = (ids: number[]) => lenient.decode(new Uint8Array(ids.filter((i) => i < 256)));
const bytesOf = (s: string) => [...new TextEncoder().encode(s)];

Deno.test("IncrementalDecoder: multi-byte characters split over tokens come out whole", () => {
  const text = "Café 東京 🙂!";
  const dec = new IncrementalDecoder(byteDecode);
  const pieces = bytesOf(text).map((b) => dec.push(b));
  pieces.push(dec.flush());
  assert.equal(pieces.join(""), text);
  for (const p of pieces) assert.ok(!p.includes("\uFFFD"), `broken piece ${JSON.stringify(p)}`);
  // The emoji's four bytes produce nothing until the last one.
  const emoji = bytesOf("🙂");
  const d2 = new IncrementalDecoder(byteDecode);
  assert.deepEqual(emoji.map((b) => d2.push(b)), ["", "", "", "🙂"]);
});

/** The fake tokenizer's bytes of a token (special ones have none). */
const tokenBytes = (id: number) => (id < 256 ? [id] : []);

Deno.test("IncrementalDecoder: any UTF-8 text, any byte grouping, adds up exactly (U+FFFD included)", () => {
  fc.assert(
    // Any text, a literal U+FFFD anywhere (the end too): the tokens' bytes tell it from a character still
    // incomplete, so no piece is ever half a character and nothing is dropped.
    fc.property(
      fc.string({ unit: "grapheme", maxLength: 40 }),
      fc.boolean(),
      (text, replacement) => {
        if (replacement) text += "\uFFFD";
        const dec = new IncrementalDecoder(byteDecode, [65, 66], tokenBytes);
        let out = "";
        for (const b of bytesOf(text)) out += dec.push(b);
        out += dec.flush();
        assert.equal(out, text);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("IncrementalDecoder: with bytes, a literal U+FFFD goes out at once; a cut-off character never", () => {
  const dec = new IncrementalDecoder(byteDecode, [], tokenBytes);
  const pieces = bytesOf("a\uFFFD").map((b) => dec.push(b));
  assert.deepEqual(pieces, ["a", "", "", "\uFFFD"]);
  assert.equal(dec.flush(), "");
  const cut = new IncrementalDecoder(byteDecode, [], tokenBytes);
  const [lead] = bytesOf("é");
  assert.equal(cut.push(0x41) + cut.push(lead), "A");
  assert.equal(cut.flush(), "", "a reply that stops mid-character ends before it");
});

Deno.test("IncrementalDecoder: a literal U+FFFD mid-text comes through once the next character arrives", () => {
  const text = "a\uFFFDb \uFFFD\uFFFD c";
  const dec = new IncrementalDecoder(byteDecode, [65, 66]);
  const out = bytesOf(text).map((b) => dec.push(b)).join("") + dec.flush();
  assert.equal(out, text);
});

Deno.test("IncrementalDecoder: special tokens add nothing; a character cut off at the end is dropped", () => {
  const dec = new IncrementalDecoder(byteDecode);
  assert.equal(dec.push(0x41), "A");
  assert.equal(dec.push(300), "");
  assert.equal(dec.push(0x42), "B");
  const [a, b] = bytesOf("é");
  assert.equal(dec.push(a), "");
  assert.equal(dec.flush(), "");
  void b;
});

Deno.test("IncrementalDecoder: invalid bytes that never complete are emitted after a few tokens", () => {
  const dec = new IncrementalDecoder(byteDecode);
  let out = "";
  for (let i = 0; i < 8; i++) out += dec.push(0xff);
  assert.ok(out.length > 0);
});

Deno.test("IncrementalDecoder: context tokens shape the first token but are not emitted", () => {
  // A decoder that strips a leading space of the sequence, like SentencePiece's.
  const strip = (ids: number[]) => byteDecode(ids).replace(/^ /, "");
  const dec = new IncrementalDecoder(strip, bytesOf("user:"));
  assert.equal(dec.push(0x20) + dec.push(0x68) + dec.push(0x69), " hi");
});

function runFilter(stops: string[], chunks: string[]): { out: string[]; stopped: boolean } {
  const f = new StopFilter(stops);
  const out = chunks.map((c) => f.push(c));
  if (!f.stopped) out.push(f.end());
  return { out, stopped: f.stopped };
}

Deno.test("StopFilter: text before the stop sequence, never the sequence, across chunk boundaries", () => {
  let r = runFilter(["END"], ["Hello E", "N", "D and more"]);
  assert.equal(r.out.join(""), "Hello ");
  assert.ok(r.stopped);
  assert.deepEqual(r.out, ["Hello ", "", ""]);
  // A false start is released once it can no longer become a stop sequence.
  r = runFilter(["END"], ["an E", "Nd", "!"]);
  assert.equal(r.out.join(""), "an ENd!");
  assert.ok(!r.stopped);
  assert.deepEqual(r.out, ["an ", "ENd", "!", ""]);
  // The held tail is text after all when generation ends.
  r = runFilter(["END"], ["fin E"]);
  assert.deepEqual(r.out, ["fin ", "E"]);
  // The earliest of several stop sequences wins.
  assert.equal(runFilter(["bb", "a"], ["xxbba"]).out.join(""), "xx");
  // No stop sequences: a pass-through.
  assert.deepEqual(runFilter([], ["a", "b"]).out, ["a", "b", ""]);
  // Empty stop strings are ignored.
  assert.equal(runFilter([""], ["abc"]).out.join(""), "abc");
});

Deno.test("StopFilter: any text, any chunking: output is the text up to the first stop, nothing of it leaks", () => {
  const alphabet = fc.constantFrom("a", "b", "c", "é", "\n");
  const str = (max: number) => fc.array(alphabet, { maxLength: max }).map((a) => a.join(""));
  fc.assert(
    fc.property(
      str(40),
      fc.array(str(4).filter((s) => s.length > 0), { minLength: 1, maxLength: 4 }),
      fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 40 }),
      (text, stops, sizes) => {
        const chunks: string[] = [];
        let i = 0;
        for (let k = 0; i < text.length; k++) {
          const n = sizes[k % sizes.length];
          chunks.push(text.slice(i, i + n));
          i += n;
        }
        // Streaming semantics: generation stops after the first chunk whose arrival completes any stop
        // sequence, cut where the earliest stop in the text so far begins. (A longer stop that starts earlier
        // but would only complete later never gets the chance, as with OpenAI.)
        let expected = text;
        let stopped = false;
        let seen = "";
        for (const c of chunks) {
          seen += c;
          const cuts = stops.map((s) => seen.indexOf(s)).filter((x) => x >= 0);
          if (cuts.length) {
            expected = seen.slice(0, Math.min(...cuts));
            stopped = true;
            break;
          }
        }
        const r = runFilter(stops, chunks);
        assert.equal(r.out.join(""), expected);
        assert.equal(r.stopped, stopped);
        // Everything emitted so far is always a prefix of the final output.
        let soFar = "";
        for (const piece of r.out) {
          soFar += piece;
          assert.ok(expected.startsWith(soFar));
        }
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("StopFilter: a stop that completes first wins over a longer one that began earlier", () => {
  // "a" arrives complete with the second chunk; "\nac" would need the third.
  assert.equal(runFilter(["a", "\nac"], ["\n", "a", "c"]).out.join(""), "\n");
  // Both complete with the same chunk: the one that starts first decides.
  assert.equal(runFilter(["a", "\nac"], ["\n", "ac"]).out.join(""), "");
});

Deno.test("StopFilter: names the stop sequence that matched first in the text", () => {
  const f = new StopFilter(["lo", "He", "xyz"]);
  assert.equal(f.push("xx H"), "xx ");
  assert.equal(f.push("ello"), "xx ".slice(3));
  assert.equal(f.stopped, true);
  assert.equal(f.matched, "He");
  const none = new StopFilter(["zz"]);
  none.push("abc");
  assert.equal(none.matched, null);
});
