import assert from "node:assert/strict";
import { type HugePageCalls, hugePagesOf, hugePagesOn, mapsWeights, onHugePages } from "./huge_pages.ts";
import { openLlama } from "./ffi.ts";

Deno.test("huge pages: the shim reads the host's setting (the bracketed word of the kernel's file)", () => {
  let expected = "none";
  try {
    expected = /\[(always|madvise|never)\]/.exec(
      Deno.readTextFileSync("/sys/kernel/mm/transparent_hugepage/enabled"),
    )?.[1] ?? "none";
  } catch {
    // not Linux, or no THP: the shim says unknown too
  }
  assert.equal(hugePagesOf(openLlama().lshim_huge_pages?.()), expected);
  assert.deepEqual([3, 2, 1, 0, null, undefined].map(hugePagesOf), [
    "always",
    "madvise",
    "never",
    "none",
    "none",
    "none",
  ]);
});

Deno.test("huge pages: on where the host gives them to advised memory and the shim can advise", () => {
  const calls = (code: number, advise = true): HugePageCalls => ({
    lshim_huge_pages: () => code,
    lshim_huge_begin: advise ? () => {} : null,
    lshim_huge_end: advise ? () => {} : null,
  });
  assert.deepEqual([3, 2, 1, 0].map((c) => hugePagesOn(calls(c))), [true, true, false, false]);
  assert.equal(hugePagesOn(calls(2, false)), false, "a shim without the calls");
});

Deno.test("huge pages: what a load allocates is advised after it, even when it throws; nothing when off", () => {
  const seen: string[] = [];
  const calls: HugePageCalls = {
    lshim_huge_pages: () => 2,
    lshim_huge_begin: () => void seen.push("begin"),
    lshim_huge_end: (min) => void seen.push(`end ${min}`),
  };
  assert.equal(onHugePages(calls, true, () => (seen.push("load"), 7)), 7);
  assert.deepEqual(seen, ["begin", "load", `end ${4 * 2 ** 20}`]);
  assert.throws(() =>
    onHugePages(calls, true, () => {
      throw new Error("bad file");
    }), /bad file/);
  assert.equal(seen.at(-1), `end ${4 * 2 ** 20}`);
  seen.length = 0;
  onHugePages(calls, false, () => seen.push("load"));
  assert.deepEqual(seen, ["load"]);
});

Deno.test("huge pages: weights are read in where the CPU computes with them on huge pages, else mapped", () => {
  assert.equal(mapsWeights(undefined, false, true), false);
  assert.equal(mapsWeights(undefined, false, false), true, "no huge pages: a copy buys nothing");
  assert.equal(mapsWeights(undefined, true, true), true, "every layer on a GPU");
  // options.mmap wins either way.
  assert.equal(mapsWeights(true, false, true), true);
  assert.equal(mapsWeights(false, true, false), false);
});
