import assert from "node:assert/strict";
import { tokensToWords } from "./words.ts";

Deno.test("tokensToWords: a leading space starts a word, pieces and punctuation join the word before", () => {
  const words = tokensToWords([
    { text: " And", start: 0.3, end: 0.5 },
    { text: " Americ", start: 0.6, end: 0.8 },
    { text: "ans", start: 0.8, end: 1.0 },
    { text: ",", start: 1.0, end: 1.05 },
    { text: " ask", start: 1.2, end: 1.4 },
    { text: " -", start: 1.4, end: 1.45 },
    { text: "", start: 1.5, end: 1.5 },
    { text: " not", start: 1.5, end: 1.7 },
  ]);
  assert.deepEqual(words, [
    { word: "And", start: 0.3, end: 0.5 },
    { word: "Americans,", start: 0.6, end: 1.05 },
    { word: "ask -", start: 1.2, end: 1.45 },
    { word: "not", start: 1.5, end: 1.7 },
  ]);
  assert.deepEqual(tokensToWords([{ text: "Hi", start: 0, end: 0.1 }]), [{ word: "Hi", start: 0, end: 0.1 }]);
  assert.deepEqual(tokensToWords([]), []);
});
