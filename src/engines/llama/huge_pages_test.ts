import assert from "node:assert/strict";
import { hugePagesOf, mapsWeights } from "./huge_pages.ts";
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

Deno.test("huge pages: weights are read in where the CPU computes with them and huge pages exist, else mapped", () => {
  assert.equal(mapsWeights(undefined, false, "madvise"), false);
  assert.equal(mapsWeights(undefined, false, "always"), false);
  assert.equal(mapsWeights(undefined, false, "never"), true, "no huge pages: a copy buys nothing");
  assert.equal(mapsWeights(undefined, false, "none"), true);
  assert.equal(mapsWeights(undefined, true, "madvise"), true, "every layer on a GPU");
  // options.mmap wins either way.
  assert.equal(mapsWeights(true, false, "madvise"), true);
  assert.equal(mapsWeights(false, true, "never"), false);
});
