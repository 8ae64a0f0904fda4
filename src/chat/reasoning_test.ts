// Tests the thinking-block splitter on every way a stream can cut the text (tags split across chunks,
// whitespace held at the end of the reasoning), and the constraint gate's three phases.
import assert from "node:assert/strict";
import { type GatedConstraint, ReasoningSplitter, templateThinks, ThinkingGate } from "./reasoning.ts";

function splitAll(chunks: string[], open = false) {
  const s = new ReasoningSplitter(open);
  let reasoning = "";
  let content = "";
  for (const c of chunks) {
    const out = s.push(c);
    reasoning += out.reasoning;
    content += out.content;
  }
  const tail = s.end();
  return { reasoning: reasoning + tail.reasoning, content: content + tail.content };
}

const chars = (t: string) => [...t];

Deno.test("reasoning: block and answer split the same however the text is chunked", () => {
  const text = "\n<think>\nFirst I add.\n\nThen I check.\n</think>\n\nThe answer is 4.";
  const want = { reasoning: "First I add.\n\nThen I check.", content: "The answer is 4." };
  assert.deepEqual(splitAll([text]), want);
  assert.deepEqual(splitAll(chars(text)), want);
  assert.deepEqual(
    splitAll(["\n<thi", "nk>\nFirst I add.\n", "\nThen I check.\n</th", "ink>\n", "\nThe answer is 4."]),
    want,
  );
});

Deno.test("reasoning: no block, an unterminated block, a prompt-opened block, a '<' that is not a tag", () => {
  assert.deepEqual(splitAll(chars("  Hello <think> there")), {
    reasoning: "",
    content: "  Hello <think> there",
  });
  assert.deepEqual(splitAll(["<think> still going  "]), { reasoning: "still going", content: "" });
  assert.deepEqual(splitAll(["done.</think>Yes"], true), { reasoning: "done.", content: "Yes" });
  assert.deepEqual(splitAll(["<b>bold</b>"]), { reasoning: "", content: "<b>bold</b>" });
  assert.deepEqual(splitAll(["<think>a < b</think>", "ok"]), { reasoning: "a < b", content: "ok" });
  assert.deepEqual(splitAll(["<th"]), { reasoning: "", content: "<th" });
  assert.equal(templateThinks("{% if enable_thinking %}<think>{% endif %}"), true);
  assert.equal(templateThinks("<|im_start|>"), false);
  assert.equal(templateThinks(null), false);
});

Deno.test("reasoning: the gate constrains only the answer, and counts thinking tokens against the budget", () => {
  const log: string[] = [];
  const inner: GatedConstraint = {
    process: (row) => {
      row.fill(-Infinity);
      row[3] = 0;
      log.push("process");
    },
    accept: (t) => void log.push(`accept ${t}`),
    skip: () => void log.push("skip"),
  };
  const splitter = new ReasoningSplitter(false);
  const gate = new ThinkingGate(inner, splitter, 1);
  const row = new Float32Array(4);
  // Before the output shows whether it thinks: the answer's mask, but <think> (id 1) stays open.
  gate.process(row);
  assert.deepEqual([...row], [-Infinity, 0, -Infinity, 0]);
  gate.accept(1);
  splitter.push("<think>");
  row.fill(0);
  gate.process(row); // thinking: unmasked
  assert.deepEqual([...row], [0, 0, 0, 0]);
  gate.accept(2);
  splitter.push("hmm</think>");
  gate.process(row);
  gate.accept(3);
  assert.deepEqual(log, ["process", "skip", "skip", "process", "accept 3"]);
});
