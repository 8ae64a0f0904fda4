import assert from "node:assert/strict";
import { formatBytes, terminalProgress } from "./progress.ts";

Deno.test("progress: sizes in the hub's decimal units", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(999), "999 B");
  assert.equal(formatBytes(1000), "1.00 kB");
  assert.equal(formatBytes(44_320), "44.3 kB");
  assert.equal(formatBytes(376_667), "377 kB");
  assert.equal(formatBytes(1_500_000_000), "1.50 GB");
});

Deno.test("progress: without a terminal, one line per finished file with what moved", () => {
  const lines: string[] = [];
  const sink = terminalProgress(false, (l) => lines.push(l));
  const a = sink.begin("onnx/model.onnx", 2_000_000);
  a.update(1_000_000); // resumed from here
  a.update(2_000_000);
  a.finish("resumed");
  const b = sink.begin("config.json", 500);
  b.update(500);
  b.finish("already there");
  sink.note("retry 1: x");
  assert.equal(lines.length, 3);
  assert.match(lines[0], /^onnx\/model\.onnx {2}2\.00 MB {2}resumed in \d+\.\ds(, [\d.]+ [kMG]?B\/s)?$/);
  assert.match(lines[1], /^config\.json {2}500 B {2}already there in \d+\.\ds$/);
  assert.equal(lines[2], "retry 1: x");
});
